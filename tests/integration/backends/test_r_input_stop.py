"""Stopping R code that waits for input: the run ends interrupted, its state kept.

Regression: IRkernel waits for an input reply in ``zmq.poll``, where R takes an
interrupt only every so many evaluations. A failing input callback (or a timeout
while the callback thought) interrupted R, which sometimes did not stop within the
grace: the kernel was restarted and the state lost. Now the interrupt is followed
by an end-of-input answer that wakes the wait, and R takes the interrupt at once.
"""

from __future__ import annotations

import threading

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends.r import RBackend

from ..conftest import run

pytestmark = pytest.mark.skipif(
    not RBackend().availability().available, reason="R and IRkernel are not installed"
)

READ = 'line <- readline("name? ")\ncat("got:[", line, "]\\n", sep = "")'


def test_a_failing_callback_interrupts_every_time_and_keeps_state() -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("no keyboard here")

    with Computer(on_input=broken, timeouts=Timeouts(interrupt_grace=4.0)) as computer:
        assert run(computer, 'kept <- "still-here"', "r").status == "ok"
        for _ in range(5):
            result = run(computer, READ, "r", timeout=20)
            assert result.status == "interrupted", result.messages
            assert result.final.extras.get("state_lost") is False, result.messages
            assert "got:[" not in result.output
        assert run(computer, "cat(kept)", "r").output == "still-here"


def test_a_timeout_while_the_callback_thinks_interrupts_and_keeps_state() -> None:
    release = threading.Event()

    def thinking(prompt: str) -> str:
        release.wait(30)
        return "too late"

    try:
        with Computer(on_input=thinking, timeouts=Timeouts(interrupt_grace=4.0)) as computer:
            assert run(computer, 'kept <- "still-here"', "r").status == "ok"
            result = run(computer, READ, "r", timeout=2)
            assert result.status == "timeout", result.messages
            assert result.final.extras.get("state_lost") is False, result.messages
            assert run(computer, "cat(kept)", "r").output == "still-here"
    finally:
        release.set()


def test_a_literal_end_of_input_answer_reads_as_empty() -> None:
    with Computer(on_input=lambda prompt: "\x04") as computer:
        result = run(computer, READ, "r", timeout=30)
    assert result.status == "ok" and result.output.endswith("got:[]\n"), result.messages
