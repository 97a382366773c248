"""Output arrives whole, in program order, and streams while the code runs."""

from __future__ import annotations

import time

import pytest

from lmc_runtime import Computer

from .harness import GUARD, assert_ends_once, run
from .languages import Profile

INTERLEAVED = [("out", "out1"), ("err", "err1"), ("out", "out2"), ("err", "err2"), ("out", "out3")]


def _interleaved(lang: Profile) -> str:
    return "\n".join(
        lang.print_line(text) if stream == "out" else lang.print_err(text)
        for stream, text in INTERLEAVED
    )


def test_interleaved_stdout_and_stderr_come_in_program_order(
    lang: Profile, computer: Computer
) -> None:
    result = run(computer, lang, _interleaved(lang))
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    assert result.output == "out1\nerr1\nout2\nerr2\nout3\n", result.describe()


def test_stderr_is_marked_as_stderr_and_stdout_is_not(lang: Profile, computer: Computer) -> None:
    result = run(computer, lang, _interleaved(lang))
    assert_ends_once(result)
    marked = "".join(
        str(m.content) for m in result.outputs if (m.extras or {}).get("stream") == "stderr"
    )
    unmarked = "".join(
        str(m.content) for m in result.outputs if (m.extras or {}).get("stream") != "stderr"
    )
    if lang.merged_streams:  # one terminal: stderr comes in order, unmarked
        assert (marked, unmarked) == ("", "out1\nerr1\nout2\nerr2\nout3\n"), result.describe()
        return
    assert marked == "err1\nerr2\n", result.describe()
    assert unmarked == "out1\nout2\nout3\n", result.describe()


def test_many_lines_arrive_whole_and_in_order(lang: Profile, computer: Computer) -> None:
    result = run(computer, lang, lang.count_lines(3000))
    assert_ends_once(result)
    assert result.status == "ok", result.describe()[:2000]
    assert result.output == "".join(f"line {i}\n" for i in range(3000))


def test_output_of_a_child_process_arrives(lang: Profile, computer: Computer) -> None:
    result = run(computer, lang, lang.child_runs("echo from-child"))
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    assert result.output == "from-child\n", result.describe()


#: A character split between two writes, then 200,000 bytes written faster than read.
_SPLIT_THEN_FLOOD = (
    "printf '\\303'; sleep 0.2; printf '\\251\\n'; head -c 200000 /dev/zero | tr '\\0' a; echo"
)


def test_a_child_process_s_output_arrives_whole(lang: Profile, computer: Computer) -> None:
    """Regression: a runner's own stdout was a non-blocking pipe, so a child writing
    faster than it was read failed (Java's ``tr: write error`` past 64 KiB), and each
    read was decoded alone, so a character split between two writes came out as two
    replacement characters (in node, Java and Python).

    What a kernel reads after the run ended (ipykernel reads a child's output in
    a thread of its own) is late output, which the next runs bring: none is lost."""
    result = run(computer, lang, lang.child_runs(_SPLIT_THEN_FLOOD))
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    whole = "\u00e9\n" + "a" * 200_000 + "\n"
    seen = result.output
    for _ in range(5):  # bounded: the rest, if any, comes with the next run
        if len(seen) >= len(whole):
            break
        seen += "".join(str(m.content) for m in run(computer, lang, lang.print_line("n")).late)
    assert seen == whole, seen[:300]


def test_output_streams_before_the_run_ends(lang: Profile, computer: Computer) -> None:
    """The first line is received while the code still sleeps (held back, it would
    only come with the timeout, ``GUARD`` s later); the test then leaves the
    stream, which stops the code, and the next run starts at once."""
    assert run(computer, lang, lang.set_kept("kept-after-leaving")).status == "ok"
    started = time.monotonic()
    stream = computer.run(
        lang.name, lang.print_line("started") + "\n" + lang.sleep(600), timeout=GUARD
    )
    try:
        first = next(m for m in stream if m.format == "output")
    finally:
        stream.close()  # type: ignore[attr-defined]
    assert first.content == "started\n"
    assert time.monotonic() - started < GUARD / 2, "the output was held back until the end"
    after = run(computer, lang, lang.show_kept)
    assert_ends_once(after)
    assert after.status == "ok" and after.output == "kept-after-leaving\n", after.describe()


#: Per language: a last expression and the text of its value (a Jupyter kernel's
#: ``text/plain``, without a newline); a last statement (a declaration, a void call)
#: that shows nothing. Shells have no values to show.
RESULTS: dict[str, tuple[str, str, str]] = {
    "python": ('"a" + "b"', "'ab'", 'print("", end="")'),
    "r": ('paste0("a", "b")', '[1] "ab"', 'invisible("ab")'),
    "javascript": ('"a" + "b"', "'ab'\n", 'process.stdout.write("")\nvoid 0'),
    "typescript": ('"a" + ("b" as string)', "'ab'\n", 'let s: string = "a" + "b"'),
    "java": ('"a" + "b"', '"ab"\n', 'String s = "a" + "b";\nSystem.out.print("");'),
}


def test_the_value_of_a_last_expression_is_shown_and_a_last_statement_shows_nothing(
    lang: Profile, computer: Computer
) -> None:
    """Regression: Java showed no value for a final expression (jshell shows it)."""
    if lang.name not in RESULTS:
        pytest.skip(f"{lang.name} has no values to show")
    expression, shown, statement = RESULTS[lang.name]
    result = run(computer, lang, lang.print_line("first") + "\n" + expression)
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    assert result.output == "first\n" + shown, result.describe()
    assert not any((m.extras or {}).get("stream") for m in result.outputs), result.describe()
    quiet = run(computer, lang, statement)
    assert quiet.status == "ok" and quiet.output == "", quiet.describe()


def test_java_shows_a_value_only_for_an_expression_without_a_semicolon(
    lang: Profile, computer: Computer
) -> None:
    """A Java cell ending in a value (a variable, a call) shows it; a semicolon makes it a
    statement, as in IPython, so ``pb.start().waitFor();`` stays quiet."""
    if lang.name != "java":
        pytest.skip("Java's own rule")
    assert run(computer, lang, "int n = 2;").output == ""
    assert run(computer, lang, "n").output == "2\n"
    assert run(computer, lang, "Math.max(n, 3)").output == "3\n"
    assert run(computer, lang, "Math.max(n, 3);").output == ""
    assert run(computer, lang, 'System.getProperty("no.such.property")').output == "null\n"
