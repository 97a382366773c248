"""Timeouts and ``interrupt()`` stop the code, say so, and keep the interpreter's state;
code that does not stop gets its interpreter restarted after the grace period."""

from __future__ import annotations

import pytest

from lmc_runtime import Computer, Message, Timeouts

from .harness import GUARD, ComputerFactory, Result, assert_ends_once, run, run_interrupted
from .languages import Profile

#: The code that runs past the timeout or until interrupted, after printing ``started``.
STUCK = {
    "busy-loop": lambda lang: lang.busy_loop,
    "sleep": lambda lang: lang.sleep(600),
    "printing-loop": lambda lang: lang.tick_forever,
}
KINDS = list(STUCK)


def _stuck(lang: Profile, kind: str) -> str:
    return lang.print_line("started") + "\n" + STUCK[kind](lang)


def _assert_stopped_with_state_kept(
    computer: Computer, lang: Profile, result: Result, status: str, kind: str
) -> None:
    assert_ends_once(result)
    assert result.status == status, result.describe()
    assert result.extras.get("state_lost") is False, result.describe()
    assert result.output.startswith("started\n"), result.describe()
    if kind == "printing-loop":  # what the loop printed before it was stopped is not lost
        assert "tick\n" in result.output, result.describe()
    said = [m for m in result.notices if m.status == status]
    assert said, f"no [lmc] notice with status {status}:\n{result.describe()}"
    after = run(computer, lang, lang.show_kept)
    assert_ends_once(after)
    assert after.status == "ok" and after.output == "kept-value\n", after.describe()


@pytest.mark.parametrize("kind", KINDS)
def test_a_timeout_stops_the_code_and_keeps_the_state(
    lang: Profile, computer: Computer, kind: str
) -> None:
    """A timeout stops the code, says so in one notice and keeps the state.

    Guards too: a timeout showed the interrupt's own error (Python's KeyboardInterrupt
    traceback, a shell's blank line) before its notice, and the final message named
    that error as if the code had failed."""
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    result = run(computer, lang, _stuck(lang, kind), timeout=2)
    _assert_timeout_alone(result, kind)
    _assert_stopped_with_state_kept(computer, lang, result, "timeout", kind)
    assert "timed out after 2 s" in result.notices[0].content, result.describe()


def _assert_timeout_alone(result: Result, kind: str) -> None:
    """The run printed what the code printed and the timeout's notice, nothing else:
    no interrupt error before the notice, none named by any message."""
    assert_ends_once(result)
    assert result.status == "timeout", result.describe()
    assert not [m for m in result.messages if (m.extras or {}).get("error")], result.describe()
    printed = result.output.splitlines(keepends=True)
    assert printed[0] == "started\n", result.describe()
    after = set(printed[1:])
    if kind == "printing-loop":
        after -= {"tick\n"}
    assert not after or after == {"tick"}, result.describe()  # a tick cut mid-line at most
    assert [m.status for m in result.notices] == ["timeout"], result.describe()


def _seen(kind: str) -> str:
    """What the run must have printed before the test interrupts it."""
    return "tick" if kind == "printing-loop" else "started"


@pytest.mark.parametrize("kind", KINDS)
def test_interrupt_from_another_thread_stops_the_code_and_keeps_the_state(
    lang: Profile, computer: Computer, kind: str
) -> None:
    def printed(message: Message) -> bool:
        return message.format == "output" and _seen(kind) in str(message.content)

    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    result, sent = run_interrupted(computer, lang, _stuck(lang, kind), when=printed)
    assert sent, f"the run ended before it was interrupted:\n{result.describe()}"
    _assert_stopped_with_state_kept(computer, lang, result, "interrupted", kind)
    assert "interrupted" in result.notices[0].content, result.describe()


@pytest.mark.local_only("the grace period is the server's setting, not the test's")
def test_code_that_does_not_stop_is_restarted_after_the_grace_period(
    lang: Profile, make_computer: ComputerFactory
) -> None:
    # The code ignores interrupts: a short grace only shortens the wait for the restart.
    grace = 1.0
    computer = make_computer(timeouts=Timeouts(execution=GUARD, interrupt_grace=grace))
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    code = lang.print_line("started") + "\n" + lang.ignore_interrupts
    result = run(computer, lang, code, timeout=2)
    assert_ends_once(result)
    assert result.status == "timeout", result.describe()
    assert result.extras.get("state_lost") is True, result.describe()
    said = [m for m in result.notices if m.status == "timeout"]
    assert said and "restarted" in said[-1].content, result.describe()
    assert f"within {grace:g} s" in said[-1].content, result.describe()
    gone = run(computer, lang, lang.show_kept)
    assert_ends_once(gone)
    assert "kept-value" not in gone.text, gone.describe()
    alive = run(computer, lang, lang.print_line("alive"))
    assert alive.status == "ok" and alive.output == "alive\n", alive.describe()


def test_interrupt_with_nothing_running_is_harmless(lang: Profile, computer: Computer) -> None:
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    computer.interrupt()
    computer.interrupt(lang.name)
    after = run(computer, lang, lang.show_kept)
    assert_ends_once(after)
    assert after.status == "ok" and after.output == "kept-value\n", after.describe()
