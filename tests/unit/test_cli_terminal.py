"""lmc run's text for people (TerminalSink), fed messages directly: no kernel."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from PIL import Image

from lmc_runtime import replies
from lmc_runtime.cli.terminal import CODE_CHARS, CODE_LINES, TerminalSink
from lmc_runtime.messages import Message


def _png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (7, 5), "red").save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _request(code: str, language: str = "python") -> dict[str, str]:
    return {"role": "assistant", "type": "code", "format": language, "content": code, "id": "r1"}


def _show(sink: TerminalSink, request: object, *messages: Message) -> None:
    sink.show(request, iter(messages))


def test_code_output_and_an_error_status(tmp_path: Path) -> None:
    out = io.StringIO()
    sink = TerminalSink(out, tmp_path, live=False)
    _show(
        sink,
        _request("x = 1\nprint(x)"),
        replies.output("1\n", "r1"),
        replies.output("Traceback ...\nValueError: no\n", "r1", error="ValueError"),
        replies.active_line(None, "r1", status="error"),
    )
    assert out.getvalue() == (
        "python> x = 1\n      | print(x)\n1\nTraceback ...\nValueError: no\n[error: ValueError]\n"
    )


def test_an_ok_run_says_no_status_and_a_shell_exit_code_is_shown(tmp_path: Path) -> None:
    out = io.StringIO()
    sink = TerminalSink(out, tmp_path, live=False)
    _show(sink, _request("true", "shell"), replies.active_line(None, "r1", status="ok"))
    _show(
        sink,
        _request("false", "shell"),
        replies.active_line(None, "r1", status="error", exit_code=1),
    )
    assert out.getvalue() == "shell> true\n\nshell> false\n[error: exit code 1]\n"


def test_images_and_html_are_saved_and_their_paths_printed(tmp_path: Path) -> None:
    out = io.StringIO()
    sink = TerminalSink(out, tmp_path / "files", live=False)
    _show(
        sink,
        _request("show()"),
        replies.image(_png(), "image/png", "r1"),
        replies.html("<b>hi</b>", "r1"),
    )
    lines = out.getvalue().splitlines()
    assert lines[1] == f"images and HTML are saved in {(tmp_path / 'files').resolve()}/"
    image_path, html_path = Path(lines[2].split()[1]), Path(lines[3].split()[1])
    assert lines[2].startswith("[image] ") and lines[2].endswith(" (7x5)")
    assert Image.open(image_path).size == (7, 5)
    assert lines[3].startswith("[html] ") and html_path.read_text() == "<b>hi</b>"
    assert image_path.name == "001-r1.png" and html_path.name == "002-r1.html"


def test_an_image_that_is_not_one_is_a_note_not_a_crash(tmp_path: Path) -> None:
    out = io.StringIO()
    bogus = Message.computer("image", "base64.png", base64.b64encode(b"not png").decode())
    _show(TerminalSink(out, tmp_path, live=False), None, bogus)
    assert out.getvalue().startswith("[image not saved: not a readable image")


def test_long_code_is_clipped(tmp_path: Path) -> None:
    out = io.StringIO()
    code = "\n".join(["x" * (CODE_CHARS * 3)] * (CODE_LINES + 5))
    _show(TerminalSink(out, tmp_path, live=False), _request(code), *())
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= CODE_CHARS + len("python> ")
    assert len(lines) == CODE_LINES + 1 and lines[-1].endswith("… 5 more lines")


def test_the_running_line_is_transient_and_erased_by_output(tmp_path: Path) -> None:
    out = io.StringIO()
    sink = TerminalSink(out, tmp_path, live=True)
    _show(
        sink,
        None,
        replies.active_line(3, "r1"),
        replies.active_line(3, "r1"),  # the same line again writes nothing
        replies.output("done\n", "r1"),
        replies.active_line(4, "r1"),
        replies.active_line(None, "r1", status="ok"),
    )
    assert out.getvalue() == "(line 3)\r\x1b[2Kdone\n(line 4)\r\x1b[2K"


def test_no_running_line_without_a_terminal_that_erases(tmp_path: Path) -> None:
    out = io.StringIO()
    sink = TerminalSink(out, tmp_path, live=False)
    _show(sink, None, replies.active_line(3, "r1"), replies.output("x", "r1"))
    assert out.getvalue() == "x\n"
