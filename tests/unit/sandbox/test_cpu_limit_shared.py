"""A session's CPU limit holds for each of its executions, however they overlap:
a run of one language keeps its watch while a run of another language begins
and ends beside it (a Computer runs each language's code on its own)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskGroup

from lmc_runtime.backends import BackendEntry, Registry, SessionSettings
from lmc_runtime.messages import Message
from lmc_runtime.replies import Status
from lmc_runtime.sandbox.computer import sandbox_computer
from lmc_runtime.sandbox.disk import WorkDisk
from lmc_runtime.sandbox.guard import Guard
from lmc_runtime.sandbox.policy import SessionLimits

from ...fakes import ScriptedBackend, ScriptedSession

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runtime's loop


class CpuClock:
    """A cgroup whose CPU time the test sets, with nothing else to report."""

    controllers = ("cpuacct",)

    def __init__(self) -> None:
        self.seconds = 0.0

    def cpu_seconds(self) -> float:
        return self.seconds

    def oom_kills(self) -> int:
        return 0

    def process_limit_hits(self) -> int:
        return 0


class NoProcesses:
    cheap = True

    def snapshot(self) -> frozenset[tuple[int, int]]:
        return frozenset()

    def end_strays(self, before: frozenset[tuple[int, int]]) -> int:
        return 0


class NoLeftovers:
    async def kill_leftovers(self) -> None:
        pass


def _guard(tmp_path: Path, clock: CpuClock, *, cpu_seconds: float) -> Guard:
    """A guard of ``cpu_seconds`` an execution, on ``clock``'s CPU time."""
    disk = WorkDisk(tmp_path / "disk", tmp_path / "disk.img", 1 << 20)
    disk.path.mkdir()
    return Guard(
        SessionLimits(cpu_seconds=cpu_seconds),
        clock,  # type: ignore[arg-type]
        disk,
        reaper=NoLeftovers(),
        census=NoProcesses(),  # type: ignore[arg-type]
    )


async def test_a_run_starts_no_task_of_its_own(tmp_path: Path) -> None:
    """Regression: each run started (and cancelled) a task of its own to watch
    its CPU time, some 45 µs of every run; one task of the session watches now."""
    import asyncio

    guard = _guard(tmp_path, CpuClock(), cpu_seconds=60.0)
    registry = Registry([])
    registry.add(BackendEntry("fake", "tests.fakes:ScriptedBackend", ()), ScriptedBackend())
    async with sandbox_computer(guard, registry=registry) as computer:
        [m async for m in computer.arun("fake", "print a")]
        idle = len(asyncio.all_tasks())
        during = []
        async for message in computer.arun("fake", "print b"):
            if not message.is_final:
                during.append(len(asyncio.all_tasks()))
    assert during == [idle]


async def test_a_run_stays_watched_while_another_language_runs_beside_it(tmp_path: Path) -> None:
    """Regression: one watch of the CPU limit for the whole session followed only
    the execution that began last; once a run of another language began and
    ended beside a long one, the long one was watched no more and could use any
    amount of CPU time (the limit ended it before: each run had a watch of its own)."""
    clock = CpuClock()
    guard = _guard(tmp_path, clock, cpu_seconds=0.1)
    registry = Registry([])
    registry.add(BackendEntry("fake", "tests.fakes:ScriptedBackend", ()), ScriptedBackend())
    registry.add(BackendEntry("other", "tests.fakes:ScriptedBackend", ()), ScriptedBackend())
    long_started, long_ended = anyio.Event(), anyio.Event()
    finals: list[Message] = []

    async with sandbox_computer(guard, registry=registry) as computer:

        async def long_run() -> None:
            # "wait" runs until interrupted (or for 10 s).
            async for message in computer.arun("fake", "print started\nwait"):
                if message.content == "started\n":
                    long_started.set()
                if message.is_final:
                    finals.append(message)
            long_ended.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(long_run)
            with anyio.fail_after(5):
                await long_started.wait()
            # A short run of another language, begun and ended meanwhile.
            short = [m async for m in computer.arun("other", "print quick")]
            assert short[-1].is_final and (short[-1].extras or {}).get("status") == "ok"
            clock.seconds = 10.0  # the long run now uses far more than its 0.1 s
            with anyio.fail_after(5):
                await long_ended.wait()
    assert len(finals) == 1
    assert (finals[0].extras or {}).get("status") == Status.CPU_LIMIT


class StuckInterrupt(ScriptedBackend):
    """Sessions whose interrupt stops the code, then never returns (a control
    pipe the code stopped reading)."""

    async def start(self, task_group: TaskGroup, settings: SessionSettings) -> ScriptedSession:
        session = await super().start(task_group, settings)
        stop = session.interrupt

        async def interrupt() -> None:
            await stop()
            await anyio.sleep_forever()

        session.interrupt = interrupt  # type: ignore[method-assign]
        return session


async def test_the_next_run_is_watched_when_an_interrupt_never_returned(tmp_path: Path) -> None:
    """Regression: the session's one watch of the CPU limit awaited the interrupt
    of the run that ran out, past that run's end; an interrupt that never
    returned left every later run of the session unwatched (each run's own
    watch was cancelled with it at its end before)."""
    clock = CpuClock()
    guard = _guard(tmp_path, clock, cpu_seconds=0.1)
    registry = Registry([])
    registry.add(BackendEntry("fake", "tests.fakes:ScriptedBackend", ()), StuckInterrupt())
    statuses: list[object] = []
    async with sandbox_computer(guard, registry=registry) as computer:
        for _ in range(2):
            with anyio.fail_after(5):  # "wait" ends when interrupted, or after 10 s
                async for message in computer.arun("fake", "print started\nwait"):
                    if message.content == "started\n":
                        clock.seconds += 10.0  # the run uses far more than its 0.1 s
                    if message.is_final:
                        statuses.append((message.extras or {}).get("status"))
    assert statuses == [Status.CPU_LIMIT, Status.CPU_LIMIT]
