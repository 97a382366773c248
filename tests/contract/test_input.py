"""Reading input: answered by ``on_input``, or, without it, failing fast (never a hang)."""

from __future__ import annotations

import re

import pytest

from .harness import ComputerFactory, assert_ends_once, run
from .languages import GOT, Profile

#: A run that reads input must end well before this; only a hang reaches it.
PROMPT_BOUND = 10.0


@pytest.mark.local_only("on_input is a callback in the caller's process")
def test_input_is_answered_by_the_callback(lang: Profile, make_computer: ComputerFactory) -> None:
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return "Ada"

    computer = make_computer(on_input=answer)
    result = run(computer, lang, lang.read_line, timeout=PROMPT_BOUND)
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    assert result.output.endswith(GOT.format("Ada") + "\n"), result.describe()
    assert prompts == ["name? "], prompts


def test_input_without_a_callback_fails_fast_or_reads_end_of_input(
    lang: Profile, make_computer: ComputerFactory
) -> None:
    computer = make_computer()
    result = run(computer, lang, lang.read_line, timeout=PROMPT_BOUND)
    assert_ends_once(result)
    assert result.status in ("ok", "error"), result.describe()
    if result.status == "ok":
        assert result.output.endswith(lang.at_end_of_input + "\n"), result.describe()
    else:
        assert result.text.strip(), f"an error without a word:\n{result.describe()}"
    after = run(computer, lang, lang.print_line("next"))
    assert after.status == "ok" and after.output == "next\n", after.describe()


@pytest.mark.local_only("on_input is a callback in the caller's process")
def test_a_failing_callback_stops_the_run_fast_and_keeps_the_state(
    lang: Profile, make_computer: ComputerFactory
) -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("no keyboard here")

    computer = make_computer(on_input=broken)
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    result = run(computer, lang, lang.read_line, timeout=PROMPT_BOUND)
    assert_ends_once(result)
    assert result.status == "interrupted", result.describe()
    assert result.extras.get("state_lost") is False, result.describe()
    assert not re.search(r"^got:\[", result.output, re.M), "the code went on past the input"
    assert [m for m in result.notices if m.status == "interrupted"], result.describe()
    assert "no keyboard here" in "".join(str(m.content) for m in result.notices), (
        f"the callback's failure is not told:\n{result.describe()}"
    )
    after = run(computer, lang, lang.show_kept)
    assert after.status == "ok" and after.output == "kept-value\n", after.describe()
