"""R on IRkernel: printed values, errors, plots, the active line and flush.console, on a real R.

What every language does alike (input, stops, deaths, streaming) is in ``tests/contract``.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from PIL import Image

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends.r import RBackend

from ..conftest import run

pytestmark = pytest.mark.skipif(
    not RBackend().availability().available, reason="R and IRkernel are not installed"
)


@pytest.fixture
def r() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        yield c


def test_printed_output_values_and_state_across_runs(r: Computer) -> None:
    first = run(r, 'x <- 41\ncat("hello\\n")\nprint(x)', "r")
    assert first.output == "hello\n[1] 41\n"
    assert first.status == "ok"
    assert run(r, "x + 1", "R").output == "[1] 42"


def test_an_error_is_output_with_status_error_and_stops_the_cell(r: Computer) -> None:
    result = run(r, 'stop("boom")\ncat("never\\n")', "r")
    assert result.status == "error"
    assert "boom" in result.output and "never" not in result.output
    errors = [m for m in result.of("console", "output") if (m.extras or {}).get("error")]
    assert errors and errors[0].extras["stream"] == "stderr"  # type: ignore[index]
    assert run(r, 'cat("still here\\n")', "r").output == "still here\n"


def test_warnings_and_messages_go_to_stderr(r: Computer) -> None:
    result = run(r, 'warning("careful")\nmessage("note")', "r")
    streams = [(m.extras or {}).get("stream") for m in result.of("console", "output")]
    assert streams == ["stderr", "stderr"]
    assert "careful" in result.output and "note" in result.output


def test_plot_1_to_10_is_a_png_that_pillow_opens(r: Computer) -> None:
    result = run(r, "plot(1:10)", "r")
    images = result.of("image", "base64.png")
    assert len(images) == 1
    with Image.open(io.BytesIO(base64.b64decode(images[0].content))) as picture:
        assert picture.format == "PNG"
        assert picture.size == (700, 500)
    assert result.final.content is None and result.status == "ok"


def test_a_data_frame_prints_as_text(r: Computer) -> None:
    result = run(r, 'data.frame(a = 1:2, b = c("x", "y"))', "r")
    assert result.output.split() == ["a", "b", "1", "1", "x", "2", "2", "y"]
    assert not result.of("code", "html")


def test_non_ascii_text_survives(r: Computer) -> None:
    assert run(r, 'cat("héllo ✓\\n")', "r").output == "héllo ✓\n"


def test_the_line_of_a_slow_top_level_expression_is_reported_before_later_output(
    r: Computer,
) -> None:
    code = 'a <- 1\n\n# a comment\nSys.sleep(0.5)\ncat("after\\n")\n'
    result = run(r, code, "r")
    kinds = [(m.format, m.content) for m in result.messages]
    assert ("active_line", 4) in kinds
    assert kinds.index(("active_line", 4)) < kinds.index(("output", "after\n"))
    assert 2 not in result.lines and 3 not in result.lines  # blank lines, comments
    assert result.lines[-1] is None


def test_a_multi_line_expression_is_reported_at_its_first_line(r: Computer) -> None:
    code = (
        'f <- function() {\n  Sys.sleep(0.2)\n}\nfor (i in 1:2) {\n  f()\n}\ns <- "a\nb"\nnchar(s)'
    )
    result = run(r, code, "r")
    assert [line for line in result.lines if line is not None] == [1, 4, 7, 9]
    assert result.output == "[1] 3"


def test_flush_console_streams_output_before_the_expression_ends(
    r: Computer, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    code = (
        f"for (i in 1:2) {{ cat(i, '\\n'); flush.console()\n"
        f"  while (i == 1 && !file.exists('{go}')) Sys.sleep(0.05) }}"
    )
    chunks: list[str] = []
    for message in r.run("r", code, timeout=30):
        if message.format == "output":
            chunks.append(message.content)
            go.touch()  # the second line only comes once the first was received
        last = message
    assert chunks == ["1 \n", "2 \n"]
    assert last.extras["status"] == "ok"  # type: ignore[index]


class Recording:
    """A launcher that logs each command line to a file, then runs it."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def wrap(self, argv: Sequence[str]) -> list[str]:
        script = f'printf "%s\\n" "$@" >> "{self.log}"; exec "$@"'
        return ["/bin/sh", "-c", script, "launcher", *argv]


def test_r_starts_through_the_launcher_with_the_shipped_startup_code(tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    with Computer(launcher=Recording(log)) as c:
        assert run(c, "1:3", "r").output == "[1] 1 2 3"
    argv = log.read_text().splitlines()
    assert argv[0] == RBackend().program()
    assert any(arg.endswith("lmc-r/lmc_startup.R") for arg in argv)


def test_the_startup_code_leaves_nothing_in_the_workspace() -> None:
    with Computer() as c:
        assert run(c, 'setdiff(ls(all.names = TRUE), ".pbd_env")', "r").output == "character(0)"
