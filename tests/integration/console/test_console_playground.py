"""The playground in a real browser: runs streamed with the running line
highlighted, images and chart data, errors, budget notices, interrupt, files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..service.server import Server
from .conftest import logged_in, new_session, run, screenshot

PLOT = """\
import matplotlib.pyplot as plt
print("hello from the console")
plt.plot([1, 2, 3], [2, 4, 3])
plt.title("rising")
plt.show()
"""

# Each line of the loop's body runs for 50 ms: long enough to be reported.
LOOP = """\
import time
for step in range(100000):
    time.sleep(0.05)
    time.sleep(0.05)
"""


@pytest.fixture
def session(page: Any, server: Server) -> Any:
    logged_in(page)
    session_id = new_session(page)
    yield session_id
    server.delete(session_id)


def test_text_and_a_plot_with_its_chart_data(page: Any, session: str) -> None:
    assert run(page, PLOT) == "ok"
    assert "hello from the console" in page.inner_text("#output")
    image = page.wait_for_selector("#output img")
    assert image.get_attribute("src").startswith("data:image/png;base64,")
    assert image.evaluate("img => img.naturalWidth") > 100  # a real image, decoded
    table = page.inner_text("#output table.chart")
    assert "rising" in table and "Line 0" in table
    screenshot(page, "playground")


def test_the_running_line_moves_and_an_interrupt_ends_the_run(page: Any, session: str) -> None:
    page.fill("#code", LOOP)
    page.click("#run")
    seen = set()
    for line in ("3", "4", "3"):  # the loop's body, round again
        page.wait_for_selector(f"#editor .cm-running[data-line='{line}']")
        seen.add(line)
    assert seen == {"3", "4"}
    screenshot(page, "active-line")
    page.click("#interrupt")
    page.wait_for_selector("#status[data-status='interrupted']")
    assert page.locator("#editor .cm-running").count() == 0
    assert run(page, "print(step > 0)") == "ok"  # the state is kept
    assert "True" in page.inner_text("#output")


def test_a_failing_run_shows_its_error_and_status(page: Any, session: str) -> None:
    assert run(page, "x = 1\n1 / 0") == "error"
    error = page.inner_text("#output pre.err")
    assert "ZeroDivisionError" in error
    assert page.get_attribute("#status", "class") == "badge error"
    screenshot(page, "error")


def test_the_output_budget_notice_is_shown_as_such(page: Any, session: str) -> None:
    assert run(page, "print('x' * 2_000_000)") == "ok"
    notice = page.inner_text("#output pre.notice")
    assert "omitted" in notice and "/outputs/" in notice


def test_the_language_switch_runs_shell(page: Any, session: str) -> None:
    page.select_option("#language", "shell")
    assert run(page, "echo from-$((40 + 2))") == "ok"
    assert "from-42" in page.inner_text("#output")


def test_upload_list_use_download_and_delete_a_file(
    page: Any, session: str, tmp_path: Path
) -> None:
    data = b"name,value\nalpha,1\n\xe2\x9c\x93,2\n"
    page.set_input_files(
        "#upload", files=[{"name": "data.csv", "mimeType": "text/csv", "buffer": data}]
    )
    row = page.wait_for_selector("#files tr:has(td:text-is('data.csv'))")
    assert str(len(data)) in row.inner_text()
    page.select_option("#language", "python")
    assert run(page, "print(open('data.csv', encoding='utf-8').read().count(','))") == "ok"
    assert "3" in page.inner_text("#output")
    with page.expect_download() as download:
        page.click("#files tr:has(td:text-is('data.csv')) button:text-is('download')")
    saved = tmp_path / "saved.csv"
    download.value.save_as(saved)
    assert saved.read_bytes() == data
    screenshot(page, "files")
    page.click("#files tr:has(td:text-is('data.csv')) button:text-is('delete')")
    page.wait_for_selector("#files tr:has(td:text-is('data.csv'))", state="detached")


def test_restart_loses_the_state(page: Any, session: str) -> None:
    page.select_option("#language", "python")
    assert run(page, "kept = 1") == "ok"
    page.click("#restart")
    page.wait_for_selector("#status[data-status='restarted']")
    assert run(page, "print(kept)") == "error"
    assert "NameError" in page.inner_text("#output")


def test_a_session_made_with_a_memory_limit_shows_the_limits_badge(
    page: Any, server: Server
) -> None:
    logged_in(page)
    page.fill("#new-memory", "256")
    session_id = new_session(page, "python")
    try:
        with server.client() as client:
            limits = client.get(f"/v1/sessions/{session_id}").json()["limits"]
        assert limits["memory_bytes"] == 256 << 20
        assert (
            run(page, "block = bytearray(600 << 20)\nblock[::4096] = b'x' * len(block[::4096])")
            == "memory_limit"
        )
        assert page.get_attribute("#status", "class") == "badge memory_limit"
        assert "memory" in page.inner_text("#output pre.notice").lower()
    finally:
        server.delete(session_id)
