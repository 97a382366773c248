"""Timeouts and ``interrupt()`` stop the code, say so, and keep the interpreter's state."""

from __future__ import annotations

import pytest

from lmc_runtime import Computer, Message

from .harness import Result, assert_ends_once, run, run_interrupted
from .languages import Profile

#: The code that runs past the timeout or until interrupted, after printing ``started``.
STUCK = {
    "busy-loop": lambda lang: lang.busy_loop,
    "sleep": lambda lang: lang.sleep(600),
    "printing-loop": lambda lang: lang.tick_forever,
}


def _stuck(lang: Profile, kind: str) -> str:
    return lang.print_line("started") + "\n" + STUCK[kind](lang)


def _assert_stopped_with_state_kept(
    computer: Computer, lang: Profile, result: Result, status: str
) -> None:
    assert_ends_once(result)
    assert result.status == status, result.describe()
    assert result.extras.get("state_lost") is False, result.describe()
    assert result.output.startswith("started\n"), result.describe()
    said = [m for m in result.notices if m.status == status]
    assert said, f"no [lmc] notice with status {status}:\n{result.describe()}"
    after = run(computer, lang, lang.show_kept)
    assert_ends_once(after)
    assert after.status == "ok" and after.output == "kept-value\n", after.describe()


@pytest.mark.parametrize("kind", ["busy-loop", "sleep"])
def test_a_timeout_stops_the_code_and_keeps_the_state(
    lang: Profile, computer: Computer, kind: str
) -> None:
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    result = run(computer, lang, _stuck(lang, kind), timeout=2)
    _assert_stopped_with_state_kept(computer, lang, result, "timeout")


def _started(message: Message) -> bool:
    return message.format == "output" and "started" in str(message.content)


@pytest.mark.parametrize("kind", ["busy-loop", "sleep", "printing-loop"])
def test_interrupt_from_another_thread_stops_the_code_and_keeps_the_state(
    lang: Profile, computer: Computer, kind: str
) -> None:
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    result, sent = run_interrupted(computer, lang, _stuck(lang, kind), when=_started)
    assert sent, f"the run ended before it was interrupted:\n{result.describe()}"
    _assert_stopped_with_state_kept(computer, lang, result, "interrupted")


def test_interrupt_with_nothing_running_is_harmless(lang: Profile, computer: Computer) -> None:
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    computer.interrupt()
    computer.interrupt(lang.name)
    after = run(computer, lang, lang.show_kept)
    assert_ends_once(after)
    assert after.status == "ok" and after.output == "kept-value\n", after.describe()
