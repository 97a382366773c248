"""jshell's errors and exceptions told with the lines of the cell."""

from __future__ import annotations

from lmc_runtime.backends.java.cells import plan_cell
from lmc_runtime.backends.java.report import Report, Snippets


def _said(report: Report, *lines: str) -> list[str]:
    out: list[str] = []
    for line in lines:
        out += report.said(line)
    return out + report.flush()


def test_a_compile_error_names_the_cell_line_and_shows_it_as_written() -> None:
    chunk = plan_cell('int x = 1;\nif (x > 0) {\n  int y = "s";\n}').chunks[1]
    report = Report(chunk, 2, "run", Snippets())
    lines = _said(
        report,
        "Error:",
        "incompatible types: java.lang.String cannot be converted to int",
        '*/  int y = "s";/*',
        "            ^-^",
    )
    assert lines == [
        "Error at line 3:",
        "incompatible types: java.lang.String cannot be converted to int",
        '  int y = "s";',
        "          ^-^",
    ]


def test_an_error_on_a_line_with_two_snippets_names_that_line() -> None:
    chunk = plan_cell('int k = 1; int j = "t";').chunks[0]
    lines = _said(Report(chunk, 1, "run", Snippets()), "Error:", "bad", ' int j = "t";', "  ^")
    assert lines[0] == "Error at line 1:"
    assert lines[2] == ' int j = "t";'


def test_an_error_without_its_caret_is_told_at_the_end() -> None:
    chunk = plan_cell("a();\nb();").chunks[1]
    assert _said(Report(chunk, 1, "run", Snippets()), "Error:", "odd") == [
        "Error at line 2:",
        "odd",
    ]


def test_exception_frames_name_lines_of_this_run_and_of_earlier_runs() -> None:
    snippets = Snippets()
    snippets.record(range(2, 3), "earlier", 4)
    snippets.record(range(3, 4), "run", 1)
    chunk = plan_cell("a();\nb();\nf();").chunks[2]
    report = Report(chunk, 4, "run", snippets)
    assert _said(
        report,
        "Exception java.lang.RuntimeException: boom",
        "      at g (#2:2)",
        "      at h (#3:1)",
        "      at (#4:1)",
        "      at 1.read (#1:1)",
    ) == [
        "Exception java.lang.RuntimeException: boom",
        "      at g (line 5 of an earlier run)",
        "      at h (line 1)",
        "      at (line 3)",
        "      at 1.read (#1:1)",
    ]


def test_snippets_keep_a_bounded_number_of_lines() -> None:
    snippets = Snippets()
    snippets.record(range(1, 20_001), "run", 1)
    assert 1 not in snippets
    assert snippets[20_000] == ("run", 1)
