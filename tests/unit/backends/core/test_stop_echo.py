"""What an interpreter writes when the runtime's interrupt ends the code is left out."""

from __future__ import annotations

from lmc_runtime.backends.core.turns import interrupts_own, without_echo


def test_a_shells_line_end_after_an_interrupt_is_left_out_once_whole_or_at_the_end() -> None:
    assert without_echo("\n", "\n") == ("", True)
    assert without_echo("tick\n\n", "\n") == ("tick\n", True)
    assert without_echo("tick\n", "\n") == ("tick\n", False)
    assert without_echo("", "\n") == ("", False)


def test_only_the_runtimes_own_stops_hide_the_interrupts_error() -> None:
    """A timeout's KeyboardInterrupt is the runtime's; the code's own error, or one
    after a caller's interrupt(), is shown."""
    error = {"error": "KeyboardInterrupt"}
    assert interrupts_own("timeout", error) and interrupts_own("input", error)
    assert not interrupts_own("interrupt", error)
    assert not interrupts_own(None, error)
    assert not interrupts_own("timeout", {"error": "ValueError"})
    assert not interrupts_own("timeout", None)
