"""Every run ends with exactly one final message, last, whose status tells how it went."""

from __future__ import annotations

import pytest

from lmc_runtime import Computer

from .harness import ComputerFactory, assert_ends_once, run
from .languages import Profile


def test_good_code_prints_exactly_its_output_and_ends_ok(lang: Profile, computer: Computer) -> None:
    result = run(computer, lang, lang.print_line("hello"))
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    assert result.output == "hello\n", result.describe()


def test_failing_code_ends_in_error_after_its_output_and_keeps_state(
    lang: Profile, computer: Computer
) -> None:
    assert run(computer, lang, lang.set_kept("still-here")).status == "ok"
    result = run(computer, lang, lang.print_line("before") + "\n" + lang.fail)
    assert_ends_once(result)
    assert result.status == "error", result.describe()
    assert result.extras.get("state_lost") in (None, False), result.describe()
    text = result.text
    assert "before\n" in text and "boom" in text, result.describe()
    assert text.index("before") < text.index("boom"), "the error overtook earlier output"
    after = run(computer, lang, lang.show_kept)
    assert after.status == "ok" and after.output == "still-here\n", after.describe()


@pytest.mark.parametrize("code", ["", "\n\n  \n"], ids=["empty", "blank-lines"])
def test_empty_code_ends_at_once_ok_with_nothing_printed(
    lang: Profile, computer: Computer, code: str
) -> None:
    result = run(computer, lang, code)
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    assert result.text == "", result.describe()
    assert run(computer, lang, lang.print_line("next")).output == "next\n"


def test_state_persists_between_runs(lang: Profile, computer: Computer) -> None:
    assert run(computer, lang, lang.set_kept("persisted")).status == "ok"
    result = run(computer, lang, lang.show_kept)
    assert_ends_once(result)
    assert result.status == "ok" and result.output == "persisted\n", result.describe()


def test_active_line_of_a_slow_line_comes_while_it_runs(lang: Profile, computer: Computer) -> None:
    before = lang.print_line("first") + "\n" + lang.sleep(0.5)
    slow_line = before.count("\n") + 1  # the sleep is the last line of its snippet
    result = run(computer, lang, before + "\n" + lang.print_line("second"))
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    if not lang.tracks_lines:  # only the final null, at the end
        assert result.lines == [None], result.describe()
        return
    reported = [m for m in result.messages if m.format == "active_line" and m.content == slow_line]
    assert reported, f"line {slow_line} was not reported:\n{result.describe()}"
    second = next(m for m in result.outputs if "second" in str(m.content))
    assert result.messages.index(reported[0]) < result.messages.index(second), result.describe()
    lines = before.count("\n") + 2
    assert all(line is None or 1 <= line <= lines for line in result.lines), result.lines


@pytest.mark.local_only("track_active_line is a Computer option the service does not offer")
def test_active_line_tracking_can_be_switched_off(
    lang: Profile, make_computer: ComputerFactory
) -> None:
    computer = make_computer(track_active_line=False)
    code = "\n".join([lang.print_line("first"), lang.sleep(0.5), lang.print_line("second")])
    result = run(computer, lang, code)
    assert_ends_once(result)
    assert result.lines == [None], result.describe()
    assert result.output == "first\nsecond\n"


#: Per language: code that fails, and the class ``extras.error`` names. Shells have
#: no error classes: their exit code (``extras.exit_code``) says how a run ended.
ERRORS: dict[str, dict[str, tuple[str, str]]] = {
    "python": {
        "raised": ("1 / 0", "ZeroDivisionError"),
        "syntax": ("1 +", "SyntaxError"),
    },
    "r": {
        "raised": ('stop("boom")', "simpleError"),
        "syntax": ("1 +)", "simpleError"),
    },
    "javascript": {
        "raised": ("null.x", "TypeError"),
        "syntax": ("let = = 1", "SyntaxError"),
        "thrown value": ('throw "boom"', "string"),
    },
    "typescript": {
        "raised": ("(null as any).x", "TypeError"),
        "syntax": ("let x: number = ;", "SyntaxError"),
        "thrown value": ('throw "boom" as string', "string"),
    },
    "java": {
        "raised": ("int zero = 0;\nSystem.out.println(1 / zero);", "java.lang.ArithmeticException"),
        "syntax": ('int wrong = "x";', "CompilationError"),
    },
}


@pytest.mark.parametrize("kind", ["raised", "syntax", "thrown value"])
def test_a_failed_run_names_its_error_class_in_extras_error(
    lang: Profile, computer: Computer, kind: str
) -> None:
    """Regression: ``extras.error`` was ``ERROR`` in R and absent in JS, TS and Java."""
    if kind not in ERRORS.get(lang.name, {}):
        pytest.skip(f"{lang.name} has no {kind} error")
    code, name = ERRORS[lang.name][kind]
    result = run(computer, lang, code)
    assert_ends_once(result)
    assert result.status == "error", result.describe()
    assert result.extras.get("error") == name, result.describe()
    assert run(computer, lang, lang.print_line("fine")).extras.get("error") is None


@pytest.mark.parametrize("kind", ["raised", "syntax", "thrown value"])
def test_a_failed_run_s_error_output_names_its_error_class_in_extras_error(
    lang: Profile, computer: Computer, kind: str
) -> None:
    """Regression: the error text's output message had no ``extras.error`` in JS, TS and Java."""
    if kind not in ERRORS.get(lang.name, {}):
        pytest.skip(f"{lang.name} has no {kind} error")
    code, name = ERRORS[lang.name][kind]
    result = run(computer, lang, lang.print_err("before") + "\n" + code)
    marked = [m for m in result.outputs if (m.extras or {}).get("error") is not None]
    assert marked, result.describe()
    assert {m.extras["error"] for m in marked} == {name}, result.describe()
    assert all(m.extras.get("stream") == "stderr" for m in marked), result.describe()
    assert not any(str(m.content).startswith("before") for m in marked), result.describe()
    fine = run(computer, lang, lang.print_line("fine"))
    assert not [m for m in fine.outputs if (m.extras or {}).get("error")], fine.describe()


def test_execution_count_counts_an_interpreter_s_runs_and_restarts_with_it(
    lang: Profile, computer: Computer, request: pytest.FixtureRequest
) -> None:
    """Regression: JS, TS and Java runs carried no ``execution_count``."""
    if lang.merged_streams:
        reason = "a shell's count is the session's: it goes on after a restart"
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    counts = [run(computer, lang, lang.print_line("n")).extras.get("execution_count")]
    counts.append(run(computer, lang, lang.fail).extras.get("execution_count"))
    counts.append(run(computer, lang, lang.print_line("n")).extras.get("execution_count"))
    assert all(isinstance(c, int) for c in counts), counts
    assert counts == [counts[0], counts[0] + 1, counts[0] + 2], counts
    assert run(computer, lang, lang.exit_self).status == "restarted"
    after = run(computer, lang, lang.print_line("back"))
    assert after.status == "ok", after.describe()
    assert after.extras.get("execution_count") == 1, after.describe()
