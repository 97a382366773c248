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

from anyio.from_thread import BlockingPortal, start_blocking_portal

from lmc_runtime.config import Limits

from . import phases
from .checkpoints import CheckpointFigures, checkpoints_phase, missing_for_checkpoints
from .languages import language_round_trips
from .model import BenchReport, FlatMemory, Timing
from .rig import Plan, Rig
from .service import missing_for_service, service_phase
from .service_figures import ServiceFigures
from .workloads import LINES_LARGE, printed_bytes

__all__ = ["run_benchmark", "run_memory", "run_service"]

logger = logging.getLogger(__name__)


def _memory_note(limits: Limits, flat: FlatMemory) -> str:
    small, large = flat.small.lines, flat.large.lines
    how = {
        "vmhwm": "VmHWM after a run, reset before it, minus VmRSS before it",
        "sampled": "the highest VmRSS sampled during a run minus VmRSS before it",
    }[flat.method]
    return (
        f"flat memory: the growth of this process's RSS ({how}) while one cell prints "
        f"{small:,} or {large:,} lines ({printed_bytes(small):,} B or "
        f"{printed_bytes(large):,} B, both far past the {limits.output_bytes:,} B output "
        "budget); the target bounds the difference of the medians in MiB, "
        "the ratio of two small growths being mostly noise."
    )


def _notes(limits: Limits, spread: float) -> list[str]:
    """Facts a reader needs to read the figures right."""
    notes = [
        "cold start, raw: start_new_kernel's wait_for_ready waits >= 0.2 s on IOPub after "
        "kernel_info_reply, then drains IOPub until a 0.2 s silence; that is in the raw figure.",
        f"active line: the two loop kernels differed by {spread:.1f}% (modes pooled); "
        "the on/off figure is a crossover over both kernels, which cancels that.",
    ]
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


def _open(stack: ExitStack) -> tuple[Limits, BlockingPortal]:
    """Limits that spill into a directory of this run's own, and the portal."""
    spill = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lmc-bench-")))
    return Limits(spill_dir=spill), stack.enter_context(start_blocking_portal("asyncio"))


def run_memory(*, quick: bool = False) -> tuple[FlatMemory, list[str]]:
    """Only the flat-memory figure, on the rig of a whole run, with its notes."""
    plan = Plan.make(1, quick)
    notes: list[str] = []
    with ExitStack() as stack:
        limits, portal = _open(stack)
        flat = phases.memory(Rig(stack, portal, plan, limits), notes)
        logger.info("shutting the kernels down")
    return flat, [*notes, _memory_note(limits, flat)]


def _service(rig: Rig, notes: list[str]) -> ServiceFigures | None:
    """The service's rows, or None (with a note saying why) without its extras."""
    missing = missing_for_service()
    if missing is not None:
        notes.append(missing)
        return None
    notes.append(
        "service: RemoteComputer.arun on a real lmc serve --no-sandbox on loopback (no "
        "bubblewrap, no cgroup quota), against the in-process Computer.arun, turn by turn."
    )
    return service_phase(rig)


def run_service(*, quick: bool = False) -> tuple[ServiceFigures | None, list[str]]:
    """Only the service's rows, on the rig of a whole run, with their notes."""
    plan = Plan.make(200, quick)
    notes: list[str] = []
    with ExitStack() as stack:
        limits, portal = _open(stack)
        service = _service(Rig(stack, portal, plan, limits), notes)
        logger.info("shutting the kernels down")
    return service, notes


def _checkpoints(quick: bool, notes: list[str]) -> CheckpointFigures | None:
    missing = missing_for_checkpoints()
    if missing is not None:
        notes.append(missing)
        return None
    logger.info("checkpoints, rollbacks and forks: the library's and the service's")
    figures = checkpoints_phase(quick=quick)
    notes += figures.notes
    return figures


def run_benchmark(*, repeat: int = 200, quick: bool = False) -> BenchReport:
    """Measure lmc-runtime against raw jupyter-client on this machine, in one run."""
    plan = Plan.make(repeat, quick)
    began = time.perf_counter()
    notes: list[str] = []
    with ExitStack() as stack:
        limits, portal = _open(stack)
        cold = phases.cold_starts(portal, plan, limits)
        rig = Rig(stack, portal, plan, limits)
        trips = phases.round_trips(rig)
        plots = phases.plots(rig)
        loops_on, loops_off, spread = phases.active_line(rig)
        lines = phases.throughput(rig, notes)
        flat = phases.memory(rig, notes)
        languages = language_round_trips(portal, plan, limits, notes)
        service = _service(rig, notes)
        checkpoints = _checkpoints(quick, notes)
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
        flat_memory=flat,
        plot_raw=Timing.from_seconds(plots["raw"]),
        plot_ours=Timing.from_seconds(plots["ours"]),
        loop_tracked=Timing.from_seconds(loops_on),
        loop_untracked=Timing.from_seconds(loops_off),
        loop_kernel_spread_pct=spread,
        languages=languages,
        service=service,
        checkpoints=checkpoints,
        duration_s=time.perf_counter() - began,
        environment=_environment(),
        notes=[*notes, *_notes(limits, spread), _memory_note(limits, flat)],
    )
