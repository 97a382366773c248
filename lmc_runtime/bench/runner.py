"""One benchmark run: lmc-runtime against raw jupyter-client, phase by phase."""

from __future__ import annotations

import logging
import os
import platform
import sys
import tempfile
import time
from contextlib import ExitStack
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from anyio.from_thread import start_blocking_portal

from ..config import Limits
from . import phases
from .languages import language_round_trips
from .model import BenchReport, Timing
from .rig import Plan, Rig
from .workloads import LINES_HUGE, LINES_LARGE, LINES_SMALL, printed_bytes

__all__ = ["run_benchmark"]

logger = logging.getLogger(__name__)


def _notes(limits: Limits, spread: float) -> list[str]:
    """Facts a reader needs to read the figures right."""
    notes = [
        "cold start, raw: start_new_kernel's wait_for_ready waits >= 0.2 s on IOPub after "
        "kernel_info_reply, then drains IOPub until a 0.2 s silence; that is in the raw figure.",
        f"active line: the two loop kernels differed by {spread:.1f}% (modes pooled); "
        "the on/off figure is a crossover over both kernels, which cancels that.",
    ]
    head = limits.output_bytes // 2
    if printed_bytes(LINES_SMALL) <= head < printed_bytes(LINES_LARGE):
        notes.append(
            f"flat memory: {LINES_SMALL:,} lines ({printed_bytes(LINES_SMALL):,} B) fit in the "
            f"output budget's {head:,} B head and never spill; {LINES_LARGE:,} and "
            f"{LINES_HUGE:,} lines both spill, so the {LINES_HUGE // 1_000_000}M row shows "
            "whether memory grows with output once it spills."
        )
    return notes


def _environment() -> dict[str, str]:
    env = {
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
        "cpus": str(os.cpu_count()),
    }
    for package in ("lmc-runtime", "jupyter-client", "ipykernel", "pyzmq"):
        try:
            env[package] = version(package)
        except PackageNotFoundError:
            env[package] = "?"
    return env


def run_benchmark(*, repeat: int = 200, quick: bool = False) -> BenchReport:
    """Measure lmc-runtime against raw jupyter-client on this machine, in one run."""
    plan = Plan.make(repeat, quick)
    began = time.perf_counter()
    notes: list[str] = []
    with ExitStack() as stack:
        spill = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lmc-bench-")))
        limits = Limits(spill_dir=spill)
        portal = stack.enter_context(start_blocking_portal("asyncio"))
        cold = phases.cold_starts(portal, plan, limits)
        rig = Rig(stack, portal, plan, limits)
        trips = phases.round_trips(rig)
        plots = phases.plots(rig)
        loops_on, loops_off, spread = phases.active_line(rig)
        lines = phases.throughput(rig, notes)
        small_kib, large_kib, huge_kib = phases.memory(rig)
        languages = language_round_trips(portal, plan, limits, notes)
        logger.info("shutting the kernels down")
    return BenchReport(
        quick=quick,
        repeat=plan.repeat,
        round_trip_raw=Timing.from_seconds(trips["raw"]),
        round_trip_async=Timing.from_seconds(trips["async"]),
        round_trip_sync=Timing.from_seconds(trips["sync"]),
        cold_start_raw=Timing.from_seconds(cold["raw"]),
        cold_start_ours=Timing.from_seconds(cold["ours"]),
        lines=LINES_LARGE,
        throughput_raw=LINES_LARGE / Timing.from_seconds(lines["raw"]).median_ms * 1000,
        throughput_ours=LINES_LARGE / Timing.from_seconds(lines["ours"]).median_ms * 1000,
        memory_lines_small=LINES_SMALL,
        memory_peak_small_kib=small_kib,
        memory_peak_large_kib=large_kib,
        memory_lines_huge=LINES_HUGE,
        memory_peak_huge_kib=huge_kib,
        plot_raw=Timing.from_seconds(plots["raw"]),
        plot_ours=Timing.from_seconds(plots["ours"]),
        loop_tracked=Timing.from_seconds(loops_on),
        loop_untracked=Timing.from_seconds(loops_off),
        loop_kernel_spread_pct=spread,
        languages=languages,
        duration_s=time.perf_counter() - began,
        environment=_environment(),
        notes=[*notes, *_notes(limits, spread)],
    )
