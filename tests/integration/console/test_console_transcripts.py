"""The transcripts page in a real browser: a session's runs, with their images
and final statuses, read back from the store."""

from __future__ import annotations

from typing import Any

from ..service.server import Server
from .conftest import logged_in, screenshot

PLOT = "import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])\nplt.show()"


def test_a_sessions_runs_with_images_and_statuses(page: Any, server: Server) -> None:
    session_id = server.create(languages=["python"], title="browsed")
    server.execute(session_id, "print('<b>not bold</b>')")
    server.execute(session_id, PLOT)
    server.execute(session_id, "1 / 0")
    server.delete(session_id)
    logged_in(page)
    page.click("#nav a[data-page='transcripts']")
    page.click(f"#transcript-table tr[data-id='{session_id}'] button")
    page.wait_for_selector(f"#transcript[data-shown='{session_id}']")
    runs = page.locator("#transcript .run")
    assert runs.count() == 3
    assert "<b>not bold</b>" in runs.nth(0).inner_text()
    assert page.locator("#transcript b").count() == 0
    assert runs.nth(1).locator("img").count() == 1
    assert [runs.nth(i).locator(".badge").inner_text() for i in range(3)] == ["ok", "ok", "error"]
    assert "ZeroDivisionError" in runs.nth(2).inner_text()
    screenshot(page, "transcripts")
