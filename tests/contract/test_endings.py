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
