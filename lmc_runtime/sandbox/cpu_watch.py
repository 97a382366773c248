"""The CPU limit of each execution, watched while it runs.

One task for the session, started with its first execution, sleeps until the
earliest moment a running execution could have spent its CPU seconds at full
use of every CPU, then reads the session's CPU time from its cgroup and either
interrupts that execution or sleeps again: no fixed polling. Executions of
several languages may run at once; each is watched. An execution that begins
or ends only moves that task's wake-up time (a cancel scope's deadline), so the
watch costs no task of its own for each execution (starting and cancelling one
was some 45 µs of every run's 4 ms on the 2-core test machine).

An interrupt runs in a task of its own, cancelled when its execution ends: one
that never returns (a control pipe the code stopped reading) holds up neither
the watch of the next execution nor anything else.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

__all__ = ["CpuWatch", "Watched"]

logger = logging.getLogger(__name__)

#: The shortest sleep between two looks at the CPU time (seconds).
SHORTEST_SLEEP = 0.05


@dataclass(eq=False)
class Watched:
    """An execution being watched: its CPU time at its start, what interrupts
    it, and whether it ran out (set here, read by the guard)."""

    cpu_start: float
    interrupt: Callable[[], Awaitable[None]]
    exceeded: bool = False
    ended: bool = False
    #: Its interrupt while it is under way (cancelled when the execution ends).
    interrupting: anyio.CancelScope | None = field(default=None, repr=False)


class CpuWatch:
    """Interrupts each execution that used ``limit`` CPU seconds, as ``read_cpu``
    (the session's CPU time so far, None if unknown) counts them on ``cpus`` CPUs."""

    def __init__(self, read_cpu: Callable[[], float | None], limit: float, cpus: int) -> None:
        self._read_cpu = read_cpu
        self._limit = limit
        self._cpus = max(1, cpus)
        #: The executions watched, with when each is looked at next.
        self._runs: dict[Watched, float] = {}
        self._sleep: anyio.CancelScope | None = None
        self._watching = False

    def begin(self, task_group: TaskGroup, run: Watched) -> None:
        """Watch ``run`` until :meth:`end`; the session's task starts in
        ``task_group`` (again, if the one it ran in has ended)."""
        self._runs[run] = anyio.current_time() + self._pause(self._limit)
        self._wake_at_earliest()
        if not self._watching:
            self._watching = True
            task_group.start_soon(self._watch, task_group, name="cpu watch")

    def end(self, run: Watched) -> None:
        """Stop watching ``run``, and cancel its interrupt if one is under way."""
        run.ended = True
        if self._runs.pop(run, None) is not None:
            self._wake_at_earliest()
        if run.interrupting is not None:
            run.interrupting.cancel()

    def _pause(self, remaining: float) -> float:
        return max(remaining / self._cpus, SHORTEST_SLEEP)

    def _wake_at_earliest(self) -> None:
        if self._sleep is not None:
            self._sleep.deadline = min(self._runs.values(), default=math.inf)

    async def _watch(self, task_group: TaskGroup) -> None:
        try:
            while True:
                with anyio.CancelScope(
                    deadline=min(self._runs.values(), default=math.inf)
                ) as sleep:
                    self._sleep = sleep
                    await anyio.sleep_forever()
                self._sleep = None
                self._look(task_group)
        finally:
            self._sleep, self._watching = None, False

    def _look(self, task_group: TaskGroup) -> None:
        """Look at the executions that are due: interrupt those out of time."""
        now = anyio.current_time()
        due = [run for run, when in self._runs.items() if when <= now]
        if not due:
            return
        used = self._read_cpu()
        for run in due:
            if used is None:
                del self._runs[run]  # not measurable: not watched
                continue
            remaining = self._limit - (used - run.cpu_start)
            if remaining > 0:
                self._runs[run] = now + self._pause(remaining)
                continue
            del self._runs[run]
            run.exceeded = True
            logger.debug("an execution used its %g CPU seconds: interrupting it", self._limit)
            task_group.start_soon(self._interrupt, run, name="cpu limit interrupt")

    @staticmethod
    async def _interrupt(run: Watched) -> None:
        with anyio.CancelScope() as scope:
            run.interrupting = scope
            if not run.ended:
                await run.interrupt()
        run.interrupting = None
