"""The benchmark's phases; each returns its raw samples in seconds."""

from __future__ import annotations

import logging
from functools import partial

from anyio.from_thread import BlockingPortal

from lmc_runtime.computer import Computer
from lmc_runtime.config import Limits

from . import ours
from .model import FlatMemory, MemoryGrowth, Timing
from .raw import raw_cold_start
from .rig import Plan, Rig, Sampler, alternate
from .rss import SAMPLE_INTERVAL_S, choose_method
from .workloads import (
    LINES_LARGE,
    LOOP,
    PLOT,
    PLOT_WARMUP,
    PRINT_ONE,
    BenchError,
    print_lines,
    printed_bytes,
)

__all__ = ["active_line", "cold_starts", "memory", "plots", "round_trips", "throughput"]

logger = logging.getLogger(__name__)

#: The slowest printing the memory runs' timeouts allow for.
_MIN_LINES_PER_S = 25_000


def cold_starts(portal: BlockingPortal, plan: Plan, limits: Limits) -> dict[str, list[float]]:
    """Nothing to the first ``print(1)`` answer: a raw kernel vs a fresh Computer."""
    logger.info("cold start: %d sample(s) each", plan.cold)
    timeout = plan.timeout * 2

    def raw(n: int) -> list[float]:
        return [raw_cold_start(PRINT_ONE, timeout=timeout) for _ in range(n)]

    def lmc(n: int) -> list[float]:
        cold = partial(ours.cold_start, PRINT_ONE, timeout=timeout, limits=limits)
        return [portal.call(cold) for _ in range(n)]

    return alternate({"raw": raw, "ours": lmc}, plan.cold, 1)


def round_trips(rig: Rig) -> dict[str, list[float]]:
    """Warm ``print(1)`` round trips: raw, ``arun`` and the sync ``run``."""
    plan = rig.plan
    samplers: dict[str, Sampler] = {
        "raw": partial(rig.raw.round_trips, PRINT_ONE, timeout=plan.timeout),
        "async": partial(rig.ours_round_trips, rig.tracked, PRINT_ONE),
        "sync": partial(ours.sync_round_trips, rig.sync, PRINT_ONE, timeout=plan.timeout),
    }
    logger.info("round trip: warming up (%d each)", plan.warmup)
    for sampler in samplers.values():
        sampler(plan.warmup)
    logger.info("round trip: %d each, in blocks of %d", plan.repeat, plan.block)
    return alternate(samplers, plan.repeat, plan.block)


def throughput(rig: Rig, notes: list[str]) -> dict[str, list[float]]:
    """The 200k-line cell: raw keeps all the text, ours reads every message."""
    plan = rig.plan
    code = print_lines(LINES_LARGE)
    expected = printed_bytes(LINES_LARGE)
    logger.info("throughput: %d run(s) of %d lines each", plan.throughput, LINES_LARGE)

    def raw(n: int) -> list[float]:
        times = []
        for _ in range(n):
            seconds, text = rig.raw.collect_stream(code, timeout=plan.long_timeout)
            if len(text) != expected:
                notes.append(f"raw kernel printed {len(text)} bytes, expected {expected}")
            times.append(seconds)
        return times

    def lmc(n: int) -> list[float]:
        times = []
        for _ in range(n):
            outcome = rig.ours_outcome(rig.tracked, code, plan.long_timeout)
            if outcome.total_bytes != expected:
                notes.append(
                    f"lmc-runtime reported {outcome.total_bytes} total output bytes "
                    f"for {LINES_LARGE} lines, expected {expected}"
                )
            times.append(outcome.seconds)
        return times

    return alternate({"raw": raw, "ours": lmc}, plan.throughput, 1)


def memory(rig: Rig, notes: list[str]) -> FlatMemory:
    """RSS growth of this process while the tracked Computer prints the plan's two
    line counts, runs of the two interleaved, after a warm-up run that spills."""
    plan = rig.plan
    method, why = choose_method()
    if why:
        notes.append(
            f"flat memory: VmHWM cannot be reset here ({why}); the growth is VmRSS "
            f"sampled every {SAMPLE_INTERVAL_S * 1000:g} ms, which can miss a shorter peak."
        )
    small, large = plan.memory_lines
    logger.info("memory: %d run(s) each of %d and %d lines (%s)", plan.memory, small, large, method)
    rig.ours_outcome(rig.tracked, print_lines(LINES_LARGE), plan.long_timeout)

    def sampler(count: int) -> Sampler:
        code = print_lines(count)
        timeout = max(plan.long_timeout, count / _MIN_LINES_PER_S)
        grow = partial(ours.rss_growth_kib, rig.tracked, code, timeout=timeout, method=method)

        def run(n: int) -> list[float]:
            growths = []
            for _ in range(n):
                kib, outcome = rig.portal.call(grow)
                if not outcome.truncated:
                    raise BenchError(f"{count} printed lines did not spill past the budget")
                logger.info(
                    "memory: %d lines in %.1f s, RSS grew %.1f MiB",
                    count,
                    outcome.seconds,
                    kib / 1024,
                )
                growths.append(kib)
            return growths

        return run

    got = alternate({"small": sampler(small), "large": sampler(large)}, plan.memory, 1)
    return FlatMemory(
        method, MemoryGrowth.of(small, got["small"]), MemoryGrowth.of(large, got["large"])
    )


def plots(rig: Rig) -> dict[str, list[float]]:
    """Seconds from sending the plot cell to its PNG, matplotlib warmed up first."""
    plan = rig.plan
    logger.info("plot: warming matplotlib up, then %d each", plan.plot)
    for code in (PLOT_WARMUP, PLOT):
        rig.raw.execute(code, timeout=plan.long_timeout)
        rig.ours_outcome(rig.tracked, code, plan.long_timeout)

    def raw(n: int) -> list[float]:
        return [rig.raw.time_to_png(PLOT, timeout=plan.timeout) for _ in range(n)]

    def lmc(n: int) -> list[float]:
        times = []
        for _ in range(n):
            outcome = rig.ours_outcome(rig.tracked, PLOT, plan.timeout)
            if outcome.image_at is None:
                raise BenchError("lmc-runtime sent no base64.png image for the plot")
            times.append(outcome.image_at)
        return times

    return alternate({"raw": raw, "ours": lmc}, plan.plot, 1)


def active_line(rig: Rig) -> tuple[list[float], list[float], float]:
    """Loop timings with tracking on and off, and the spread between the two kernels.

    A crossover: the tracked Computer and the ``track_active_line=False`` one
    each run the loop both ways (``track_active_line`` is read per execution),
    so the on/off samples pool both kernels and the speed difference between
    two kernel processes, often larger than the sampler's cost, cancels out.
    """
    plan = rig.plan
    logger.info("active line: %d loop run(s) per kernel and mode", plan.loop)

    def sampler(computer: Computer, track: bool) -> Sampler:
        def run(n: int) -> list[float]:
            times = []
            for _ in range(n):
                computer.track_active_line = track
                outcome = rig.ours_outcome(computer, LOOP, plan.long_timeout)
                if track != (outcome.lines_seen > 0):
                    raise BenchError(
                        f"with track_active_line={track} the loop sent "
                        f"{outcome.lines_seen} active_line numbers"
                    )
                times.append(outcome.seconds)
            return times

        return run

    samplers = {
        "a-on": sampler(rig.tracked, True),
        "b-off": sampler(rig.untracked, False),
        "a-off": sampler(rig.tracked, False),
        "b-on": sampler(rig.untracked, True),
    }
    try:
        for warm in samplers.values():
            warm(1)
        got = alternate(samplers, plan.loop, 1)
    finally:
        rig.tracked.track_active_line = True
        rig.untracked.track_active_line = False
    kernel_a = Timing.from_seconds(got["a-on"] + got["a-off"]).median_ms
    kernel_b = Timing.from_seconds(got["b-on"] + got["b-off"]).median_ms
    spread = (max(kernel_a, kernel_b) / min(kernel_a, kernel_b) - 1.0) * 100.0
    return got["a-on"] + got["b-on"], got["a-off"] + got["b-off"], spread
