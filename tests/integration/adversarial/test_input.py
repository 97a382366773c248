"""input() in Python: loops, threads, getpass, and callbacks that fail in every way."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from lmc_runtime import Computer, Timeouts

from ..conftest import Result, run
from .conftest import GUARD, assert_well_formed


class Answers:
    """An on_input callback whose behaviour each test sets."""

    def __init__(self) -> None:
        self.callback: Any = lambda prompt: "unset"

    def __call__(self, prompt: str) -> Any:
        return self.callback(prompt)


@pytest.fixture
def answers() -> Answers:
    return Answers()


@pytest.fixture
def ic(answers: Answers) -> Iterator[Computer]:
    """A Computer whose input() is answered by ``answers``; input timeout 1 s."""
    with Computer(
        timeouts=Timeouts(execution=10, interrupt_grace=2.0, input=1.0), on_input=answers
    ) as computer:
        yield computer


def test_input_in_a_loop_with_a_callback_and_getpass_masking(
    ic: Computer, answers: Answers
) -> None:
    replies = iter(f"ans{i}" for i in range(100))
    answers.callback = lambda prompt: next(replies)
    result = run(ic, "for i in range(5):\n    print(input(f'q{i}? '))")
    secret = run(ic, "import getpass\nprint(getpass.getpass('pw: '))")
    assert_well_formed(result)
    assert result.output == "".join(f"q{i}? ans{i}\nans{i}\n" for i in range(5))
    assert secret.output == "pw: ****\nans5\n"


def test_input_from_a_thread_of_the_cell_is_answered(ic: Computer, answers: Answers) -> None:
    answers.callback = lambda prompt: "t-ans"
    result = run(
        ic,
        "import threading\nr = []\nt = threading.Thread(target=lambda: r.append(input('t? ')))\n"
        "t.start(); t.join()\nprint(r)",
    )
    assert_well_formed(result)
    assert result.output.endswith("['t-ans']\n")


def _slow(prompt: str) -> str:
    time.sleep(3)
    return "late"


@pytest.mark.parametrize(
    ("callback", "phrase"),
    [
        pytest.param(lambda p: 5, "returned int, not str", id="returns-int"),
        pytest.param(lambda p: None, "returned NoneType, not str", id="returns-None"),
        pytest.param(_slow, "no answer in time", id="slower-than-the-input-timeout"),
    ],
)
def test_a_failing_input_callback_interrupts_fast_and_keeps_state(
    ic: Computer, answers: Answers, callback: Any, phrase: str
) -> None:
    answers.callback = callback
    run(ic, "kept = 1")
    start = time.monotonic()
    result = run(ic, "x = input('q? ')\nprint('got', x)")
    assert time.monotonic() - start < 3
    assert_well_formed(result)
    assert phrase in result.output
    assert result.status == "interrupted" and result.final.extras["state_lost"] is False  # type: ignore[index]
    assert run(ic, "print(kept)").output == "1\n"


def test_an_unencodable_input_answer_is_a_clear_error(ic: Computer, answers: Answers) -> None:
    """An answer holding a lone surrogate cannot be sent to the kernel: the run
    says so and ends with its final message, never with an internal error."""
    answers.callback = lambda prompt: "\ud800"
    result = run(ic, "print(repr(input('s? ')))")
    assert "internal error" not in result.output
    assert_well_formed(result)


def test_an_async_input_callback_is_awaited() -> None:
    async def answer(prompt: str) -> str:
        await asyncio.sleep(0.05)
        return "async-ans"

    with Computer(timeouts=Timeouts(execution=10), on_input=answer) as comp:
        result = run(comp, "print(input('a? '))")
    assert_well_formed(result)
    assert result.output == "a? async-ans\nasync-ans\n"


def test_interrupt_during_a_pending_input_callback_stops_promptly_and_keeps_state() -> None:
    """interrupt() while the on_input callback is still running ends the run at
    once with the state kept: the run does not wait for the callback (whose late
    answer is dropped), so the grace period never runs out into a restart."""
    called, release = threading.Event(), threading.Event()

    def slow(prompt: str) -> str:
        called.set()
        release.wait(GUARD)  # it answers only once the run has ended
        return "stale"

    with Computer(
        timeouts=Timeouts(execution=GUARD, interrupt_grace=5.0, input=GUARD * 2), on_input=slow
    ) as comp:
        run(comp, "kept = 1")
        box: dict[str, Any] = {}

        def runner() -> None:
            box["result"] = run(comp, "x = input('slow? ')\nprint('got', x)")

        thread = threading.Thread(target=runner)
        thread.start()
        assert called.wait(GUARD)
        comp.interrupt()
        thread.join(GUARD)
        assert not thread.is_alive()  # it ended with its callback still thinking
        release.set()
        after = run(comp, "print(kept)")
    result: Result = box["result"]
    assert_well_formed(result)
    assert result.status == "interrupted"
    assert result.final.extras["state_lost"] is False, result.output  # type: ignore[index]
    assert after.output == "1\n"
