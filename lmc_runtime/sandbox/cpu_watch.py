"""The CPU limit of one execution, watched while it runs.

One task for the session, started with its first execution, sleeps until the
earliest moment the running execution could have spent its CPU seconds at full
use of every CPU, then reads the session's CPU time from its cgroup and either
interrupts the code or sleeps again: no fixed polling. An execution that begins
or ends only moves that task's wake-up time (a cancel scope's deadline), so the
watch costs no task of its own for each execution (starting and cancelling one
was some 45 µs of every run's 4 ms on the 2-core test machine).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from anyio.abc import TaskGroup

__all__ = ["CpuWatch", "Watched"]

logger = logging.getLogger(__name__)

#: The shortest sleep between two looks at the CPU time (seconds).
SHORTEST_SLEEP = 0.05


@dataclass
class Watched:
    """The execution being watched: its CPU time at its start, what interrupts
    it, and whether it ran out (set here, read by the guard)."""

    cpu_start: float
    interrupt: Callable[[], Awaitable[None]]
    exceeded: bool = False


class CpuWatch:
    """Interrupts an execution that used ``limit`` CPU seconds, as ``read_cpu``
    (the session's CPU time so far, None if unknown) counts them on ``cpus`` CPUs."""

    def __init__(self, read_cpu: Callable[[], float | None], limit: float, cpus: int) -> None:
        self._read_cpu = read_cpu
        self._limit = limit
        self._cpus = max(1, cpus)
        self._run: Watched | None = None
        self._wake = math.inf
        self._sleep: anyio.CancelScope | None = None
        self._started = False

    def begin(self, task_group: TaskGroup, run: Watched) -> None:
        """Watch ``run`` until :meth:`end` (the session's task starts in ``task_group``)."""
        self._run = run
        self._wake_at(anyio.current_time() + max(self._limit / self._cpus, SHORTEST_SLEEP))
        if not self._started:
            self._started = True
            task_group.start_soon(self._watch, name="cpu watch")

    def end(self, run: Watched) -> None:
        """Stop watching ``run`` (at once: it is interrupted no more)."""
        if self._run is run:
            self._run = None
            self._wake_at(math.inf)

    def _wake_at(self, when: float) -> None:
        self._wake = when
        if self._sleep is not None:
            self._sleep.deadline = when

    async def _watch(self) -> None:
        while True:
            with anyio.CancelScope(deadline=self._wake) as sleep:
                self._sleep = sleep
                await anyio.sleep_forever()
            self._sleep = None
            run = self._run
            if run is None or anyio.current_time() < self._wake:
                continue  # it ended, or the next one began meanwhile
            used = self._read_cpu()
            if used is None:
                self._run, self._wake = None, math.inf  # not measurable: not watched
                continue
            remaining = self._limit - (used - run.cpu_start)
            if remaining > 0:
                self._wake = anyio.current_time() + max(remaining / self._cpus, SHORTEST_SLEEP)
                continue
            run.exceeded = True
            self._run, self._wake = None, math.inf
            logger.debug("an execution used its %g CPU seconds: interrupting it", self._limit)
            await run.interrupt()
