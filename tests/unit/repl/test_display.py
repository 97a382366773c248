"""The rich, plain and JSON-lines displays, rendered into recording consoles."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image
from rich.console import Console

from lmc_runtime import replies
from lmc_runtime.repl.display import RichRun, RichView, code_view, output_style
from lmc_runtime.repl.images import (
    HalfBlocks,
    ImageStore,
    Preview,
    choose_preview,
    kitty_escape,
)
from lmc_runtime.repl.plain import JsonlView, PlainView

RED = "\x1b[31m"


def _console(width: int = 80) -> Console:
    """Records what is printed for good; not a terminal, so no live panel frames."""
    return Console(
        record=True,
        width=width,
        height=30,
        force_terminal=False,
        color_system="truecolor",
        file=io.StringIO(),
    )


def _terminal() -> Console:
    """A terminal without colours: live panel frames land in the file as plain text."""
    return Console(width=80, height=30, force_terminal=True, color_system=None, file=io.StringIO())


def _png(width: int = 40, height: int = 20, colour: tuple[int, int, int] = (255, 0, 0)) -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


def _run(console: Console, tmp_path: Path, code: str = "print(1)") -> RichRun:
    return RichRun(RichView(console, ImageStore(tmp_path / "images"), Preview.NONE), "python", code)


def test_output_streams_line_by_line_and_keeps_the_unfinished_line(tmp_path: Path) -> None:
    console = _console()
    run = _run(console, tmp_path)
    run.add(replies.output("first\nsec", "r"))
    assert console.export_text(clear=False) == "first\n"
    run.add(replies.output("ond\n", "r"))
    run.add(replies.output("tail without newline", "r"))
    run.close()
    assert console.export_text() == "first\nsecond\ntail without newline\n"


def test_carriage_returns_keep_only_what_a_terminal_would_show(tmp_path: Path) -> None:
    console = _console()
    run = _run(console, tmp_path)
    run.add(replies.output("10%\r", "r"))
    run.add(replies.output("50%\r100%\r\n", "r"))
    run.add(replies.output("windows line\r\n", "r"))
    run.close()
    assert console.export_text() == "100%\nwindows line\n"


def test_errors_and_stderr_are_red_notes_yellow_stdout_plain(tmp_path: Path) -> None:
    console = _console()
    run = _run(console, tmp_path)
    run.add(replies.output("fine\n", "r"))
    run.add(replies.output("warned\n", "r", stream="stderr"))
    run.add(replies.output("Traceback: ZeroDivisionError\n", "r", error="ZeroDivisionError"))
    run.add(replies.notice("Execution was interrupted at line 1", "interrupted", "r"))
    run.close()
    styled = console.export_text(styles=True)
    assert "fine" in styled and f"{RED}fine" not in styled
    assert f"{RED}warned" in styled
    assert f"{RED}Traceback: ZeroDivisionError" in styled
    assert "\x1b[33m[lmc] Execution was interrupted" in styled  # yellow


@pytest.mark.parametrize(
    ("message", "style"),
    [
        (replies.output("x", "r"), ""),
        (replies.output("x", "r", stream="stderr"), "red"),
        (replies.output("x", "r", error="NameError"), "red"),
        (replies.output("x", "r", late=True), "dim"),
        (replies.notice("timed out", "timeout", "r"), "yellow"),
        (replies.notice("broken", "backend_error", "r"), "bold red"),
        (replies.not_understood("what?", "r"), "red"),
    ],
)
def test_output_style(message: object, style: str) -> None:
    assert output_style(message) == style  # type: ignore[arg-type]


def test_code_view_marks_and_highlights_the_active_line() -> None:
    view = code_view("a = 1\nb = 2\nc = 3", "python", active=2)
    lines = view.plain.splitlines()
    assert lines[0].startswith("  1 a = 1")
    assert lines[1].startswith("\u276f 2 b = 2")
    assert lines[2].startswith("  3 c = 3")

    def backgrounds(at: int) -> set[str]:
        return {
            span.style.bgcolor.name
            for span in view.spans
            if span.start <= at < span.end
            and not isinstance(span.style, str)
            and span.style.bgcolor is not None
        }

    assert "grey30" in backgrounds(view.plain.index("b = 2"))
    assert "grey30" not in backgrounds(view.plain.index("a = 1"))


def test_code_view_of_long_code_shows_a_window_around_the_active_line() -> None:
    code = "\n".join(f"x{i} = {i}" for i in range(1, 101))
    lines = code_view(code, "python", active=60, max_lines=10).plain.splitlines()
    assert len(lines) == 10
    assert any(line.startswith("\u276f  60 x60 = 60") for line in lines)


def test_the_live_panel_shows_the_running_line_and_goes_away(tmp_path: Path) -> None:
    console = _terminal()
    file = console.file
    assert isinstance(file, io.StringIO)
    run = _run(console, tmp_path, code="import time\ntime.sleep(5)\nprint('done')")
    run.add(replies.active_line(2, "r"))
    frame = file.getvalue()
    assert "\u276f 2 time.sleep(5)" in frame and "line 2 · Ctrl-C interrupts" in frame
    assert "  1 import time" in frame and "  3 print('done')" in frame
    run.add(replies.active_line(3, "r"))
    assert "\u276f 3 print('done')" in file.getvalue()[len(frame) :]  # the mark moved
    run.note("Interrupting")
    assert "Interrupting" in file.getvalue()
    run.add(replies.output("done\n", "r"))
    run.add(replies.active_line(None, "r", status="ok"))
    before_close = len(file.getvalue())
    run.close()
    assert "\x1b[2K" in file.getvalue()[before_close:]  # the transient panel is erased


def test_images_are_saved_and_their_path_printed(tmp_path: Path) -> None:
    console = _console()
    run = _run(console, tmp_path)
    run.add(replies.image(_png(), "image/png", "r"))
    run.add(replies.html("<b>hi</b>", "r"))
    run.close()
    text = console.export_text()
    saved = sorted((tmp_path / "images").iterdir())
    assert [p.suffix for p in saved] == [".png", ".html"]
    assert f"[image] {saved[0]}" in text and f"[html] {saved[1]}" in text
    with Image.open(saved[0]) as img:
        assert img.size == (40, 20)


def test_half_block_preview_draws_two_pixels_per_cell(tmp_path: Path) -> None:
    console = _console()
    run = RichRun(RichView(console, ImageStore(tmp_path), Preview.BLOCKS), "python", "")
    run.add(replies.image(_png(40, 20, (0, 255, 0)), "image/png", "r"))
    run.close()
    rows = [line for line in console.export_text(clear=False).splitlines() if "\u2580" in line]
    assert len(rows) == 10 and all(row == "\u2580" * 40 for row in rows)
    assert "38;2;0;255;0" in console.export_text(styles=True)  # the pixels' own colour


def test_half_blocks_fit_the_size_limits(tmp_path: Path) -> None:
    path = ImageStore(tmp_path).save_image(_png(1000, 2000), "base64.png")
    console = _console()
    console.print(HalfBlocks(path, max_columns=50, max_rows=12))
    rows = [line for line in console.export_text().splitlines() if line]
    assert len(rows) == 12 and all(len(row) <= 50 for row in rows)


def test_kitty_escape_is_chunked_and_ends_the_transfer() -> None:
    escape = kitty_escape(b"\x89PNG" + bytes(10_000), columns=40)
    chunks = escape.split("\x1b\\")[:-1]
    assert len(chunks) == 4  # ~13.3k base64 characters in 4096-character chunks
    assert chunks[0].startswith("\x1b_Ga=T,f=100,c=40,m=1;")
    assert chunks[-1].startswith("\x1b_Gm=0;")


def test_kitty_preview_writes_the_escape_after_the_run(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    run = RichRun(RichView(console, ImageStore(tmp_path), Preview.KITTY), "python", "")
    run.add(replies.image(_png(), "image/png", "r"))
    run.close()
    assert "\x1b_Ga=T,f=100" in out.getvalue()


def test_choose_preview() -> None:
    colour = Console(force_terminal=True, color_system="truecolor", file=io.StringIO())
    plain = Console(force_terminal=False, file=io.StringIO())
    assert choose_preview({"TERM": "xterm-kitty"}, colour, enabled=True) is Preview.KITTY
    assert choose_preview({"KITTY_WINDOW_ID": "1"}, colour, enabled=True) is Preview.KITTY
    # tmux would swallow the kitty escape
    assert choose_preview({"KITTY_WINDOW_ID": "1", "TMUX": "/t"}, colour, enabled=True) is (
        Preview.BLOCKS
    )
    assert choose_preview({}, colour, enabled=True) is Preview.BLOCKS
    assert choose_preview({}, colour, enabled=False) is Preview.NONE
    assert choose_preview({"TERM": "xterm-kitty"}, plain, enabled=True) is Preview.NONE


def test_rich_view_info_and_error() -> None:
    console = _console()
    view = RichView(console, ImageStore(Path("unused")), Preview.NONE)
    view.error("could not write x")
    view.info("switched to r")
    styled = console.export_text(styles=True)
    assert "\x1b[1;31mcould not write x" in styled and "switched to r" in styled


def test_plain_view_has_no_escapes_and_names_image_files(tmp_path: Path) -> None:
    out = io.StringIO()
    view = PlainView(out, ImageStore(tmp_path))
    run = view.begin({}, "python", "x")
    run.add(replies.active_line(1, "r"))
    run.add(replies.output("partial", "r"))
    run.add(replies.image(_png(), "image/png", "r"))
    run.add(replies.output("err\n", "r", stream="stderr"))
    run.close()
    view.error("bad")
    saved = next(tmp_path.iterdir())
    assert out.getvalue() == f"partial\n[image] {saved}\nerr\nerror: bad\n"
    assert "\x1b" not in out.getvalue()


def test_jsonl_view_prints_every_message_and_keeps_notes_apart() -> None:
    out, notes = io.StringIO(), io.StringIO()
    view = JsonlView(out, notes)
    request = {"role": "assistant", "type": "code", "format": "python", "content": "1", "id": "a"}
    run = view.begin(request, "python", "1")
    run.add(replies.output("1\n", "a"))
    run.note("Interrupting")
    run.close()
    view.info("switched to r")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0] == request and lines[1]["content"] == "1\n" and len(lines) == 2
    assert notes.getvalue() == "Interrupting\nswitched to r\n"


def test_repeated_interrupt_notes_are_shown_once(tmp_path: Path) -> None:
    out = io.StringIO()
    plain = PlainView(out, ImageStore(tmp_path)).begin({}, "python", "x")
    console = _console()
    rich = _run(console, tmp_path)
    for _ in range(5):  # Ctrl-C pressed again and again
        plain.note("Interrupting")
        rich.note("Interrupting")
    plain.close()
    rich.close()
    assert out.getvalue().count("Interrupting") == 1
    assert console.file.getvalue().count("Interrupting") == 1  # type: ignore[attr-defined]
