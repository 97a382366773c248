"""A run stopped before the kernel began it: on real Python and R kernels.

An idle kernel ignores SIGINT, and ipykernel drops the reply of a request
interrupted before its code runs. A caller that leaves (or interrupts) the
moment it sent the code must still find the state kept and the kernel alive.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel
import pytest

from lmc_runtime import Computer, Message, Timeouts

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

#: Sets ``kept``, sleeps (interruptibly) for 20 s, and prints ``kept``.
CODE = {
    "python": ("kept = 'kept-value'", "import time\ntime.sleep(20)", "print(kept)"),
    "r": ('kept <- "kept-value"', "Sys.sleep(20)", 'cat(kept, "\\n", sep = "")'),
}
#: Runs left at once: each hits the kernel at a slightly different moment.
TRIES = 4


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _all(run: AsyncIterator[Message]) -> list[Message]:
    with anyio.fail_after(60):  # a generous bound: only a hang trips it
        return [message async for message in run]


async def _first(run: AsyncIterator[Message]) -> None:
    await run.__anext__()


@pytest.mark.parametrize("language", list(CODE))
async def test_a_run_left_the_moment_it_was_sent_keeps_the_state(language: str) -> None:
    """Regression: the interrupt of a run its caller left at once (an HTTP client
    that dropped its connection) reached the kernel before the code, was lost, and
    the ladder restarted the kernel 3 s later: the state was gone, and nobody was
    told (the restart's notice went to the left run)."""
    setup, sleep, show = CODE[language]
    async with Computer(timeouts=Timeouts(interrupt_grace=10.0)) as computer:
        if not computer.registry.availability(language).available:
            pytest.skip(f"{language} is not available here")
        assert (await _all(computer.arun(language, setup)))[-1].status == "ok"
        for _ in range(TRIES):
            run = computer.arun(language, sleep)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_first, run)
                await anyio.lowlevel.checkpoint()
                tg.cancel_scope.cancel()
            await run.aclose()  # type: ignore[attr-defined]
            after = await _all(computer.arun(language, show))
            # Joined: the kernel may flush ``print``'s text and its line end apart.
            assert "".join(m.content for m in after if m.format == "output") == "kept-value\n"
            assert after[-1].status == "ok", after


#: A ``pre_run_cell`` hook slower than the runtime's wait for the code's start
#: (``UNANNOUNCED``): a busy host's kernel, made deterministic.
SLOW_START = """\
import time
def _slow_start(info=None):
    time.sleep(2.5)
get_ipython().events.register("pre_run_cell", _slow_start)
kept = "kept-value"
"""


async def test_an_interrupt_that_comes_before_the_code_is_held_until_the_code_runs() -> None:
    """Regression (CI, a busy host): the code announced its start more than 1 s after
    the kernel began the request, so the runtime interrupted without waiting longer;
    the SIGINT came during IPython's ``pre_run_cell`` hooks, which swallowed it, the
    code slept on, and the ladder restarted the kernel: ``kept`` was lost."""
    async with Computer(timeouts=Timeouts(interrupt_grace=8.0)) as computer:
        assert (await _all(computer.arun("python", SLOW_START)))[-1].status == "ok"
        stopped = await _all(computer.arun("python", "import time\ntime.sleep(30)", timeout=0.5))
        assert stopped[-1].status == "timeout", stopped
        assert not any("restarted" in m.content for m in stopped if m.format == "output"), stopped
        after = await _all(computer.arun("python", "print(kept)"))
        outputs = [m.content for m in after if m.format == "output"]
        assert outputs == ["kept-value\n"], after


#: The main thread blocks SIGINT while it sleeps, so the kernel hands the interrupt
#: to another of its threads: its handler is pending and the sleep goes on, as
#: after an interrupt that lands just before a blocking call (between Python's
#: last look for signals and the call, which only an interrupted call ends).
MISSED = """\
import signal, time
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
try:
    time.sleep(30)
finally:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
"""


async def test_an_interrupt_the_main_thread_did_not_see_still_stops_the_code() -> None:
    """Regression (CI, a busy host, about 1 run in 400 left at once): the SIGINT
    reached the kernel as its code began ``time.sleep(20)``; CPython runs a
    signal's handler only once the sleep returns, so the code slept on, and the
    ladder restarted the kernel 10 s later: ``kept`` was lost."""
    async with Computer(timeouts=Timeouts(interrupt_grace=8.0)) as computer:
        assert (await _all(computer.arun("python", "kept = 'kept-value'")))[-1].status == "ok"
        stopped = await _all(computer.arun("python", MISSED, timeout=1.0))
        assert stopped[-1].status == "timeout", stopped
        assert stopped[-1].extras.get("state_lost") is False, stopped
        after = await _all(computer.arun("python", "print(kept)"))
        assert "".join(m.content for m in after if m.format == "output") == "kept-value\n", after
        assert after[-1].status == "ok", after
