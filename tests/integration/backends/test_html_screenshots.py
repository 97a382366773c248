"""HTML: the markup back as code/html, then a screenshot by the real headless Chromium,
with the page cut off from the network."""

from __future__ import annotations

import base64
import io
import os
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PIL import Image

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends import BackendEntry, Registry
from lmc_runtime.backends.html import HtmlBackend, find_chromium

from ..conftest import Result, run, run_interrupting

needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")


def picture(result: Result) -> Image.Image:
    (shot,) = result.of("image", "base64.png")
    return Image.open(io.BytesIO(base64.b64decode(shot.content)))


def running_with(marker: str) -> list[int]:
    """Live processes (not zombies) whose command line mentions ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode("utf-8", "replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if marker in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


class Recorder(BaseHTTPRequestHandler):
    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def loopback_server() -> Iterator[tuple[int, list[str]]]:
    """An HTTP server on 127.0.0.1 that records every request it gets."""
    hits: list[str] = []
    handler = type("Handler", (Recorder,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def browser() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=1.0)) as c:
        yield c


@needs_chromium
def test_html_comes_back_as_code_then_as_a_png_screenshot(browser: Computer) -> None:
    page = '<body style="margin:0;background:rgb(0,128,255)"><h1>Hello</h1></body>'
    result = run(browser, page, "html", timeout=60)
    assert [(m.type, m.format) for m in result.messages] == [
        ("code", "html"),
        ("image", "base64.png"),
        ("console", "active_line"),
    ]
    assert result.messages[0].content == page
    with picture(result) as image:
        assert image.format == "PNG" and image.size == (1024, 768)
        assert image.convert("RGB").getpixel((1000, 700)) == (0, 128, 255)
    assert result.final.content is None
    assert result.final.extras == {"status": "ok", "screenshot": True}


@needs_chromium
def test_the_page_cannot_reach_the_network_not_even_loopback(
    browser: Computer, loopback_server: tuple[int, list[str]]
) -> None:
    port, hits = loopback_server
    page = f"""<body style="margin:0">
<img src="http://127.0.0.1:{port}/image.png">
<img src="http://localhost:{port}/by-name.png">
<img src="http://example.com/external.png">
<link rel="stylesheet" href="http://[::1]:{port}/v6.css">
<script>
fetch("http://127.0.0.1:{port}/fetch").catch(() => {{}});
fetch("https://example.com/fetch").catch(() => {{}});
new Image().src = "http://127.0.0.1:{port}/beacon";
document.body.style.background = "rgb(0, 200, 0)";  // the script did run
</script></body>"""
    result = run(browser, page, "html", timeout=60)
    assert result.status == "ok"
    with picture(result) as image:
        assert image.convert("RGB").getpixel((1000, 700)) == (0, 200, 0)
    assert hits == []


@needs_chromium
def test_a_page_that_never_finishes_is_stopped_by_the_timeout(tmp_path: Path) -> None:
    with Computer(work_dir=tmp_path / "work") as computer:
        result = run(computer, "<script>while (true) {}</script>", "html", timeout=2)
        assert [m.type for m in result.messages[:1]] == ["code"]
        assert result.status == "timeout"
        assert "No screenshot was made" in result.output and "2 s" in result.output
        assert result.final.extras["screenshot"] is False  # type: ignore[index]
        assert running_with(str(tmp_path / "work")) == []
        again = run(computer, "<p>fine</p>", "html", timeout=60)
    assert again.status == "ok" and again.of("image", "base64.png")


@needs_chromium
def test_interrupt_stops_the_render(browser: Computer) -> None:
    # The page comes back as code/html first, then the render (stuck here) begins.
    result = run_interrupting(
        browser,
        "<script>while (true) {}</script>",
        "html",
        lambda m: m.type == "code",
        timeout=60,
    )
    assert result.status == "interrupted"
    assert "interrupted" in result.output


def test_without_chromium_the_html_still_comes_with_a_note(tmp_path: Path) -> None:
    registry = Registry([])
    registry.add(
        BackendEntry("html", "unused:unused"), HtmlBackend(chromium=str(tmp_path / "no-chromium"))
    )
    with Computer(registry=registry) as computer:
        assert computer.languages["html"].available
        result = run(computer, "<b>bold</b>", "html")
    html, note, final = result.messages
    assert (html.type, html.format, html.content) == ("code", "html", "<b>bold</b>")
    assert "No screenshot was made" in note.content and "apt-get install chromium" in note.content
    assert final.format == "active_line" and final.content is None
    assert final.extras == {"status": "ok", "screenshot": False}


class Recording:
    """A launcher that logs each command line to a file, then runs it."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def wrap(self, argv: Sequence[str]) -> list[str]:
        script = 'printf "%s\\n" "$@" >> "$LOG"; exec "$@"'
        return ["/bin/sh", "-c", script.replace("$LOG", str(self.log)), "launcher", *argv]


@needs_chromium
def test_chromium_runs_through_the_launcher_with_the_offline_flags(tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    with Computer(launcher=Recording(log)) as computer:
        result = run(computer, "<p>through the launcher</p>", "html", timeout=60)
    assert result.status == "ok" and result.of("image", "base64.png")
    argv = log.read_text().splitlines()
    assert os.path.basename(argv[0]).startswith(("chromium", "google-chrome"))
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
    ):
        assert flag in argv
