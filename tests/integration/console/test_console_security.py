"""The console's defences, in a real browser: the token as the only login, a
strict CSP, text output never parsed as HTML, HTML output walled off."""

from __future__ import annotations

from typing import Any

import httpx

from ..service.server import TOKEN, Server
from .conftest import log_in, logged_in, new_session, run, screenshot

MARKER = "document.body.dataset.pwned"


def test_every_response_of_the_console_carries_a_strict_policy_and_no_cookie(
    server: Server,
) -> None:
    for path in ("/ui/", "/ui/static/app.js", "/ui/static/console.css"):
        response = httpx.get(server.url + path)
        assert response.status_code == 200, path
        policy = response.headers["content-security-policy"]
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
        assert directives["default-src"] == "'self'"
        assert directives["script-src"] == "'self'"
        assert directives["frame-ancestors"] == "'none'"
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert "set-cookie" not in response.headers
        assert response.headers["x-content-type-options"] == "nosniff"
    assert httpx.get(server.url + "/ui/static/..%2Froutes.py").status_code == 404
    assert httpx.get(server.url + "/ui/static/nothing.js").status_code == 404


def test_the_page_holds_no_token_and_loads_nothing_from_elsewhere(
    server: Server, page: Any
) -> None:
    html = httpx.get(server.url + "/ui/").text
    assert TOKEN not in html
    hosts = page.evaluate("performance.getEntriesByType('resource').map(e => new URL(e.name).host)")
    assert hosts and set(hosts) == {f"127.0.0.1:{server.port}"}


def test_a_wrong_token_is_refused_and_nothing_leaks(server: Server, page: Any) -> None:
    secret_id = server.create(languages=["python"])
    try:
        log_in(page, "not-the-token")
        page.wait_for_selector("#login-error:has-text('refused')")
        assert page.is_hidden("#playground") and page.is_hidden("#nav")
        assert page.evaluate("sessionStorage.length") == 0
        assert page.evaluate("document.cookie") == ""
        assert secret_id not in page.content()
        screenshot(page, "login-refused")
    finally:
        server.delete(secret_id)


def test_the_token_lives_in_session_storage_only(page: Any) -> None:
    logged_in(page)
    assert page.evaluate("sessionStorage.getItem('lmc.token')") == TOKEN
    assert page.evaluate("localStorage.length") == 0
    assert page.context.cookies() == []
    page.click("#logout")
    page.wait_for_selector("body[data-page='login']")
    assert page.evaluate("sessionStorage.length") == 0


ATTACK = """\
print('<script>document.body.dataset.pwned = "script"</script>')
print('<img src=x onerror="document.body.dataset.pwned = \\'img\\'">')
from IPython.display import HTML, display
display(HTML('''<p id="inside">framed</p>
<script>parent.document.body.dataset.pwned = "frame-script"</script>
<img src=x onerror="parent.document.body.dataset.pwned = 'frame-img'">'''))
print("done")
"""


def test_output_that_attacks_the_page_does_nothing(server: Server, page: Any) -> None:
    logged_in(page)
    session_id = new_session(page, "python")
    try:
        assert run(page, ATTACK) == "ok"
        text = page.inner_text("#output")
        assert '<script>document.body.dataset.pwned = "script"</script>' in text
        assert "<img src=x onerror=" in text
        # The printed tags are text: no element came of them.
        assert page.locator("#output script").count() == 0
        assert page.locator("#output img").count() == 0
        frame_element = page.wait_for_selector("#output iframe")
        assert frame_element.get_attribute("sandbox") == "allow-scripts"
        frame = frame_element.content_frame()
        frame.wait_for_selector("#inside")
        frame.wait_for_load_state("load")  # the broken image has failed by now
        # The frame's origin is opaque: it cannot read the console's storage.
        assert (
            frame.evaluate(
                "(() => { try { return sessionStorage.length } catch (e) { return 'denied' } })()"
            )
            == "denied"
        )
        assert page.evaluate(MARKER) is None
        page.wait_for_selector("#output iframe[data-height]")  # sized to what it shows
        screenshot(page, "xss")
    finally:
        server.delete(session_id)
