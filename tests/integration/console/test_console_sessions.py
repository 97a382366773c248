"""The sessions page in a real browser: fed by ``GET /v1/events``, it shows a
session made elsewhere within a second, without a reload."""

from __future__ import annotations

import time
from typing import Any

from ..service.server import Server
from .conftest import logged_in, screenshot


def sessions_page(page: Any) -> None:
    logged_in(page)
    page.click("#nav a[data-page='sessions']")
    page.wait_for_selector("#feed-state:has-text('live')")


def test_a_session_made_through_the_api_appears_within_a_second(page: Any, server: Server) -> None:
    sessions_page(page)
    page.evaluate("window.notReloaded = true")
    session_id = server.create(languages=["python", "shell"], title="from the API")
    made = time.monotonic()
    try:
        row = page.wait_for_selector(f"#session-table tr[data-id='{session_id}']", timeout=1000)
        assert time.monotonic() - made < 1.0
        assert "python, shell" in row.inner_text() and "idle" in row.inner_text()
        assert page.evaluate("window.notReloaded") is True
        server.execute(session_id, "x = bytearray(50 << 20)")  # usage to show
        page.wait_for_selector(f"tr[data-id='{session_id}'] .usage:has-text('mem')")
        screenshot(page, "sessions")
    finally:
        server.delete(session_id)
    page.wait_for_selector(f"#session-table tr[data-id='{session_id}']", state="detached")


def test_a_running_session_shows_running_then_idle(page: Any, server: Server) -> None:
    sessions_page(page)
    session_id = server.create(languages=["python"])
    try:
        page.wait_for_selector(f"tr[data-id='{session_id}']")
        with (
            server.client() as client,
            client.stream(
                "POST",
                f"/v1/sessions/{session_id}/execute",
                json={
                    "role": "assistant",
                    "type": "code",
                    "format": "python",
                    "content": "import time\ntime.sleep(2)",
                },
            ) as response,
        ):
            page.wait_for_selector(f"tr[data-id='{session_id}'] td:text-is('running')")
            response.read()
        page.wait_for_selector(f"tr[data-id='{session_id}'] td:text-is('idle')")
    finally:
        server.delete(session_id)


def test_the_filter_and_the_delete_button(page: Any, server: Server) -> None:
    sessions_page(page)
    shell = server.create(languages=["shell"])
    python = server.create(languages=["python"])
    try:
        page.wait_for_selector(f"tr[data-id='{python}']")
        page.fill("#filter", "shell")
        page.wait_for_selector(f"tr[data-id='{python}']", state="detached")
        assert page.locator(f"tr[data-id='{shell}']").count() == 1
        page.click(f"tr[data-id='{shell}'] button:text-is('delete')")
        page.wait_for_selector(f"tr[data-id='{shell}']", state="detached")
        with server.client() as client:
            ended = client.get(f"/v1/sessions/{shell}")
        assert ended.status_code == 404 and "deleted" in ended.json()["error"]["message"]
    finally:
        server.delete(python)
        server.delete(shell)


def test_a_sessions_title_is_in_its_row(page: Any, server: Server) -> None:
    sessions_page(page)
    session_id = server.create(languages=["python"], title="hypothesis B")
    try:
        page.wait_for_selector(f"tr[data-id='{session_id}'] td:text-is('hypothesis B')")
        page.fill("#filter", "hypothesis b")
        page.wait_for_selector(f"tr[data-id='{session_id}']")
        with server.client() as client:
            shown = client.get(f"/v1/sessions/{session_id}").json()
        assert shown["title"] == "hypothesis B"
    finally:
        server.delete(session_id)
