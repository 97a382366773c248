"""The contenders of one benchmark run, and how they take turns.

The main thread drives everything. The raw kernel is used from it directly;
the async Computers live in a blocking portal's event loop, and each timed
block runs there as one call, so the async figures hold no thread hop; the
sync Computer uses its own portal, as ``Computer.run`` does for any caller.
Contenders take turns in blocks, the order rotating, to cancel drift.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial

from anyio.from_thread import BlockingPortal

from lmc_runtime.computer import Computer
from lmc_runtime.config import Limits

from . import ours
from .raw import RawKernel
from .workloads import MEMORY_LINES, MEMORY_LINES_QUICK, PRINT_ONE

__all__ = ["Plan", "Rig", "Sampler", "alternate"]

logger = logging.getLogger(__name__)

#: Takes ``n`` samples (seconds, or KiB for memory) from one contender.
Sampler = Callable[[int], list[float]]


@dataclass(frozen=True)
class Plan:
    """How many samples each phase takes."""

    repeat: int
    warmup: int = 20
    block: int = 5
    cold: int = 3
    throughput: int = 3
    plot: int = 10
    loop: int = 12
    memory_lines: tuple[int, int] = MEMORY_LINES
    memory: int = 3
    timeout: float = 30.0
    long_timeout: float = 180.0

    @classmethod
    def make(cls, repeat: int, quick: bool) -> Plan:
        if repeat < 1:
            raise ValueError(f"repeat must be at least 1, got {repeat}")
        if quick:
            return cls(
                repeat=min(repeat, 30),
                cold=1,
                throughput=1,
                plot=3,
                loop=4,
                memory_lines=MEMORY_LINES_QUICK,
            )
        return cls(repeat=repeat)


def alternate(samplers: dict[str, Sampler], count: int, block: int) -> dict[str, list[float]]:
    """``count`` samples from each sampler, taken in blocks whose order rotates."""
    samples: dict[str, list[float]] = {name: [] for name in samplers}
    names = list(samplers)
    turn = 0
    while any(len(s) < count for s in samples.values()):
        shift = turn % len(names)
        for name in names[shift:] + names[:shift]:
            need = min(block, count - len(samples[name]))
            if need > 0:
                samples[name].extend(samplers[name](need))
        turn += 1
    return samples


class Rig:
    """The kernels under test and the portal that hosts the async Computers."""

    def __init__(
        self, stack: ExitStack, portal: BlockingPortal, plan: Plan, limits: Limits
    ) -> None:
        self.plan, self.portal = plan, portal
        logger.info("starting the warm kernels")
        self.raw = RawKernel.start(timeout=plan.timeout * 2)
        stack.callback(self.raw.shutdown)
        self.tracked = self._open_async(stack, Computer(limits=limits))
        self.untracked = self._open_async(stack, Computer(limits=limits, track_active_line=False))
        self.sync = Computer(limits=limits)
        stack.callback(self.sync.close)
        for computer in (self.tracked, self.untracked):
            self.portal.call(partial(ours.measure, computer, PRINT_ONE, timeout=plan.timeout * 2))
        ours.sync_round_trips(self.sync, PRINT_ONE, 1, timeout=plan.timeout * 2)

    def _open_async(self, stack: ExitStack, computer: Computer) -> Computer:
        return stack.enter_context(self.portal.wrap_async_context_manager(computer))

    def ours_round_trips(self, computer: Computer, code: str, count: int) -> list[float]:
        return self.portal.call(
            partial(ours.round_trips, computer, code, count, timeout=self.plan.timeout)
        )

    def ours_outcome(self, computer: Computer, code: str, timeout: float) -> ours.Outcome:
        return self.portal.call(partial(ours.measure, computer, code, timeout=timeout))
