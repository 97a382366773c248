"""The CPU limit's watch (lmc_runtime.sandbox.cpu_watch), with a CPU clock the
test sets: it interrupts the execution that used its seconds, only that one,
and it costs one task for the session, not one for each execution."""

from __future__ import annotations

import asyncio

import anyio
import pytest
from anyio.abc import TaskGroup

from lmc_runtime.sandbox.cpu_watch import CpuWatch, Watched

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the runtime's loop (its ZMQ sockets are asyncio's)


class Clock:
    """The session's CPU time, as the test says it is; how often it was read."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0
        self.read = anyio.Event()

    def __call__(self) -> float:
        self.reads += 1
        self.read.set()
        return self.now


def _interrupts(into: list[str], name: str, done: anyio.Event):
    async def interrupt() -> None:
        into.append(name)
        done.set()

    return interrupt


async def _runs_out(watch: CpuWatch, clock: Clock, tg: TaskGroup, name: str) -> list[str]:
    """Begin an execution already past its CPU seconds; the interrupts seen once its own came."""
    seen: list[str] = []
    done = anyio.Event()
    run = Watched(0.0, _interrupts(seen, name, done))
    clock.now = 0.5
    watch.begin(tg, run)
    with anyio.fail_after(5):
        await done.wait()
    assert run.exceeded
    return seen


async def test_an_execution_past_its_cpu_seconds_is_interrupted() -> None:
    clock = Clock()
    watch = CpuWatch(clock, limit=0.1, cpus=1)
    async with anyio.create_task_group() as tg:
        assert await _runs_out(watch, clock, tg, "run") == ["run"]
        tg.cancel_scope.cancel()


async def test_an_execution_under_its_limit_is_looked_at_again() -> None:
    clock, seen, done = Clock(), [], anyio.Event()
    watch = CpuWatch(clock, limit=0.1, cpus=1)
    async with anyio.create_task_group() as tg:
        run = Watched(0.0, _interrupts(seen, "run", done))
        clock.now = 0.01  # 0.09 s left at the first look
        watch.begin(tg, run)
        with anyio.fail_after(5):
            await clock.read.wait()
        assert not run.exceeded and seen == []
        clock.now = 0.2
        with anyio.fail_after(5):
            await done.wait()
        assert run.exceeded and clock.reads == 2
        tg.cancel_scope.cancel()


async def test_only_the_execution_that_ran_out_is_interrupted() -> None:
    """Regression: an execution that ended is never interrupted for its time,
    even when the next one begins before the watch wakes."""
    clock, seen, done = Clock(), [], anyio.Event()
    watch = CpuWatch(clock, limit=0.1, cpus=1)
    async with anyio.create_task_group() as tg:
        first = Watched(0.0, _interrupts(seen, "first", done))
        watch.begin(tg, first)
        watch.end(first)
        second = Watched(0.0, _interrupts(seen, "second", done))
        clock.now = 0.5
        watch.begin(tg, second)
        with anyio.fail_after(5):
            await done.wait()
        assert seen == ["second"] and second.exceeded and not first.exceeded
        tg.cancel_scope.cancel()


async def test_executions_start_no_task_of_their_own() -> None:
    """Regression: each execution started (and cancelled) a task of its own to
    watch its CPU time, some 45 µs of every run."""
    clock = Clock()
    watch = CpuWatch(clock, limit=60.0, cpus=2)
    async with anyio.create_task_group() as tg:
        watch.begin(tg, Watched(0.0, _interrupts([], "x", anyio.Event())))
        await anyio.sleep(0)
        tasks = len(asyncio.all_tasks())
        for _ in range(100):
            run = Watched(0.0, _interrupts([], "x", anyio.Event()))
            watch.begin(tg, run)
            await anyio.sleep(0)
            watch.end(run)
        assert len(asyncio.all_tasks()) == tasks
        tg.cancel_scope.cancel()


async def test_the_watch_starts_again_once_its_task_group_has_ended() -> None:
    """Regression: the session's watch started once, in the task group of the
    first execution; once that group ended, no later execution was watched."""
    clock = Clock()
    watch = CpuWatch(clock, limit=0.1, cpus=1)
    async with anyio.create_task_group() as first:
        watch.begin(first, Watched(0.0, _interrupts([], "x", anyio.Event())))
        first.cancel_scope.cancel()
    async with anyio.create_task_group() as second:
        assert await _runs_out(watch, clock, second, "later") == ["later"]
        second.cancel_scope.cancel()


async def test_runs_of_two_languages_at_once_are_each_watched() -> None:
    clock, seen, done = Clock(), [], anyio.Event()
    watch = CpuWatch(clock, limit=0.1, cpus=1)
    async with anyio.create_task_group() as tg:
        slow = Watched(0.0, _interrupts(seen, "slow", done))
        quick = Watched(0.0, _interrupts(seen, "quick", anyio.Event()))
        watch.begin(tg, slow)
        watch.begin(tg, quick)
        watch.end(quick)  # the quick one ends first
        clock.now = 0.5
        with anyio.fail_after(5):
            await done.wait()
        assert seen == ["slow"] and slow.exceeded and not quick.exceeded
        tg.cancel_scope.cancel()
