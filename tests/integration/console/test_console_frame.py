"""HTML output in a real browser: its own scripts run in their frame (a plot's
script draws), and cannot reach the console: not its DOM, its storage, its
token, its cookies, its page's address, a new window or the API."""

from __future__ import annotations

from typing import Any

import httpx

from ..service.server import Server
from .conftest import logged_in, new_session, run

PLOT = """\
from IPython.display import HTML, display
display(HTML('''<div id="plot" style="height: 600px">waiting</div>
<script>
  // as a plotting library does: find its element, draw into it
  document.getElementById("plot").textContent = "drawn by " + ["a", "script"].join(" ");
  document.body.dataset.ran = "yes";
</script>'''))
"""

#: Each attempt records ``name:won`` or ``name:denied`` in the frame's body.
ATTACK = """\
from IPython.display import HTML, display
display(HTML('''<p id="inside">framed</p>
<script>
  const results = [];
  function attempt(name, act) {
    try { act(); results.push(name + ":won"); } catch (e) { results.push(name + ":denied"); }
  }
  attempt("parent-dom", () => { parent.document.body.dataset.pwned = "parent-dom"; });
  attempt("top-dom", () => { top.document.body.dataset.pwned = "top-dom"; });
  attempt("parent-storage", () => {
    parent.document.body.dataset.pwned = parent.sessionStorage.getItem("lmc.token");
  });
  attempt("storage", () => { if (sessionStorage.getItem("lmc.token") === null) throw 0; });
  attempt("local-storage", () => { localStorage.setItem("pwned", "1"); });
  attempt("cookie", () => { document.cookie = "pwned=1"; if (!document.cookie) throw 0; });
  attempt("popup", () => { if (!window.open("/ui/#pwned")) throw 0; });
  attempt("navigate-top", () => { top.location.href = "/ui/?pwned#sessions"; });
  parent.postMessage({ lmcFrameHeight: 1e9 }, "*");
  fetch("/v1/sessions")
    .then(() => results.push("fetch:won"), () => results.push("fetch:denied"))
    .finally(() => {
      document.body.dataset.results = results.join(" ");
      document.body.dataset.done = "yes";
    });
</script>'''))
"""


DENIED = (
    "parent-dom",
    "top-dom",
    "parent-storage",
    "storage",
    "local-storage",
    "cookie",
    "popup",
    "fetch",
)


def html_frame(page: Any) -> Any:
    element = page.wait_for_selector("#output iframe")
    assert element.get_attribute("sandbox") == "allow-scripts"
    return element.content_frame()


def test_scripts_in_html_output_run_in_their_frame(server: Server, page: Any) -> None:
    logged_in(page)
    session_id = new_session(page, "python")
    try:
        assert run(page, PLOT) == "ok"
        frame = html_frame(page)
        frame.wait_for_selector("body[data-ran='yes']")
        assert frame.inner_text("#plot") == "drawn by a script"
        # The frame reports its height: the whole plot shows, not a scrolled slice.
        page.wait_for_selector("#output iframe[data-height]")
        height = page.eval_on_selector("#output iframe", "f => f.getBoundingClientRect().height")
        assert 600 <= height < 700  # its content's height, not more
    finally:
        server.delete(session_id)


def test_scripts_in_html_output_cannot_reach_the_console(server: Server, page: Any) -> None:
    logged_in(page)
    address = page.url
    session_id = new_session(page, "python")
    try:
        assert run(page, ATTACK) == "ok"
        frame = html_frame(page)
        frame.wait_for_selector("body[data-done='yes']")
        results = dict(
            r.split(":") for r in str(frame.get_attribute("body", "data-results")).split()
        )
        # A refused navigation of the top page throws or not, as the browser has it:
        # that the page stayed where it was is checked below.
        results.pop("navigate-top")
        assert results == dict.fromkeys(DENIED, "denied")
        assert page.evaluate("document.body.dataset.pwned") is None
        assert page.url == address
        assert page.context.pages == [page]  # no window was opened
        assert page.evaluate("sessionStorage.getItem('lmc.token')") is not None
        assert page.context.cookies() == []
        # The height it claimed is clamped.
        height = page.eval_on_selector("#output iframe", "f => f.getBoundingClientRect().height")
        assert height <= 2000
    finally:
        server.delete(session_id)


def test_the_frame_page_is_sandboxed_wherever_it_is_opened(server: Server, page: Any) -> None:
    response = httpx.get(server.url + "/ui/frame")
    assert response.status_code == 200
    policy = response.headers["content-security-policy"]
    directives = dict((d.strip() + " ").split(" ", 1) for d in policy.split(";"))
    assert directives["sandbox"].strip() == "allow-scripts"
    assert directives["default-src"].strip() == "'none'"
    assert "connect-src" not in directives  # default-src 'none': it fetches nothing
    assert "set-cookie" not in response.headers
    # Opened in a tab of its own, it still has an opaque origin.
    page.goto(server.url + "/ui/frame")
    assert page.evaluate("origin") == "null"
    assert (
        page.evaluate(
            "(() => { try { return sessionStorage.length } catch (e) { return 'denied' } })()"
        )
        == "denied"
    )
