"""Python-only crashes and the async and threaded uses of a real ipykernel.

What every language does on timeouts, interrupts, deaths and restarts is in
``tests/contract``.
"""

from __future__ import annotations

import os
import signal
import threading

import anyio
import pytest

from lmc_runtime import Computer, Timeouts, UsageError

from ..conftest import run


@pytest.mark.parametrize(
    ("code", "phrase"),
    [
        pytest.param("import os\nos._exit(1)", "exited with code 1", id="os._exit"),
        pytest.param("import ctypes\nctypes.string_at(0)", "SIGSEGV", id="segfault"),
    ],
)
def test_a_crashed_kernel_is_reported_restarted_and_the_next_run_works(
    computer: Computer, code: str, phrase: str
) -> None:
    result = run(computer, code)
    assert result.status == "kernel_died"
    assert result.final.extras["state_lost"] is True  # type: ignore[index]
    assert "restarted" in result.output and phrase in result.output
    assert run(computer, "print('alive')").output == "alive\n"


def test_async_api_interrupt_from_another_task() -> None:
    async def main() -> list[str]:
        statuses: list[str] = []
        async with Computer(timeouts=Timeouts(interrupt_grace=2)) as c:
            async with anyio.create_task_group() as tg:

                async def consume() -> None:
                    async for m in c.arun("python", "import time\ntime.sleep(60)"):
                        if m.format == "active_line" and m.content == 2:
                            tg.start_soon(c.ainterrupt)
                        if m.is_final:
                            statuses.append(m.extras["status"])  # type: ignore[index]

                tg.start_soon(consume)
        return statuses

    assert anyio.run(main) == ["interrupted"]


def test_async_use_requires_entering_the_computer() -> None:
    async def main() -> None:
        async for _ in Computer().arun("python", "1"):
            pass

    with pytest.raises(UsageError):
        anyio.run(main)


def test_concurrent_sync_runs_are_serialized_per_language(computer: Computer) -> None:
    outputs: list[str] = []

    def worker(n: int) -> None:
        outputs.append(run(computer, f"import time\ntime.sleep(0.2)\nprint({n})").output)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outputs) == ["0\n", "1\n", "2\n"]


def test_an_exception_in_the_sync_caller_mid_run_frees_the_session(computer: Computer) -> None:
    """Ctrl-C (or any signal handler that raises) in a thread blocked in run()
    must stop the run's step in the event loop too, or it holds the session forever."""

    class Stop(Exception):
        pass

    def raise_stop(signum: int, frame: object) -> None:
        raise Stop

    run(computer, "1")  # the kernel is up: the signal comes while the code runs
    previous = signal.signal(signal.SIGUSR1, raise_stop)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGUSR1))
    timer.start()
    try:
        with pytest.raises(Stop):
            for _ in computer.run("python", "import time\ntime.sleep(60)"):
                pass
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert run(computer, "print('free')").output == "free\n"
