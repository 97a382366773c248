"""The checkpoint rows of the report, in one run: checkpoint, rollback and fork of a
Python interpreter holding 1 MB, 100 MB and 1 GB of state (1 MB and 10 MB when
quick), against starting afresh and re-running the code that built it; and the
memory of unmodified checkpoints and of forks.

Two sets of rows: the library's (a ``Computer``, measured by
:func:`benchmarks.checkpoints.measure`) and the service's (``RemoteComputer`` on a
real, sandboxed ``lmc serve``, measured by
:func:`benchmarks.checkpoints_service.measure_service`). The issue's targets, at
100 MB, are shown with each row; the rows are informational (a miss is reported,
and does not fail the benchmark).
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass, field

from lmc_runtime.errors import LMCError

from ..checkpoints import measure
from .model import Figure
from .service import missing_for_service
from .workloads import BenchError

__all__ = ["CheckpointFigures", "checkpoints_phase", "missing_for_checkpoints"]

#: The issue's targets at 100 MB of state: milliseconds, and MiB of memory.
TARGETS = {"checkpoint_ms": 50.0, "rollback_ms": 50.0, "fork_ms": 100.0, "private_mib": 10.0}
_TARGET_MB = 100
#: The sizes measured, in MB, and how many times each step is repeated.
SIZES, QUICK_SIZES = (1, 100, 1000), (1, 10)
REPEAT, QUICK_REPEAT = 5, 3

logger = logging.getLogger(__name__)

_TIMED = (("checkpoint_ms", "checkpoint"), ("rollback_ms", "rollback"), ("fork_ms", "fork"))


def _target(key: str, mb: int, value: float, unit: str) -> tuple[str, bool | None]:
    if mb != _TARGET_MB:
        return "", None
    return f"<= {TARGETS[key]:g} {unit}", value <= TARGETS[key]


def _timed(prefix: str, what: str, rerun: str, mb: int, f: dict[str, float]) -> list[Figure]:
    """The checkpoint, rollback and fork rows of one size, each against the re-run."""
    rows = []
    for key, name in _TIMED:
        ours, base = f[key], f["rebuild_ms"]
        target, passed = _target(key, mb, ours, "ms")
        rows.append(
            Figure(
                f"{prefix}{name}_{mb}mb",
                f"{name} {what} holding {mb} MB, median",
                "ms",
                ours,
                base,
                rerun,
                ours / base if base > 0 else float("inf"),
                target=target,
                passed=passed,
                informational=True,
            )
        )
    return rows


def _library(mb: int, f: dict[str, float]) -> list[Figure]:
    rows = _timed("", "of a Python interpreter", "new Computer + re-run", mb, f)
    private = f["private_kib_each"] / 1024
    target, passed = _target("private_mib", mb, private, "MiB")
    rows.append(
        Figure(
            f"checkpoint_private_{mb}mb",
            f"private memory of an unmodified checkpoint, {mb} MB of state",
            "MiB",
            private,
            f["pss_kib_each"] / 1024,
            "its PSS",
            None,
            target=target,
            passed=passed,
            informational=True,
        )
    )
    return rows


def _service(mb: int, f: dict[str, float]) -> list[Figure]:
    rows = _timed("service_", "over lmc serve, a session", "new session + re-run", mb, f)
    added = f["checkpoint_pss_kib_each"] / 1024
    target, passed = _target("private_mib", mb, added, "MiB")
    session = f["session_pss_kib"] / 1024
    rows += [
        Figure(
            f"service_checkpoint_memory_{mb}mb",
            f"memory an unmodified checkpoint adds to lmc serve (PSS), {mb} MB of state",
            "MiB",
            added,
            f["checkpoint_private_kib_each"] / 1024,
            "its private memory",
            None,
            target=target,
            passed=passed,
            informational=True,
        ),
        Figure(
            f"service_fork_memory_{mb}mb",
            f"memory a fork adds to lmc serve (PSS, a whole session), {mb} MB of state",
            "MiB",
            f["fork_pss_kib_each"] / 1024,
            session,
            "the parent session",
            f["fork_pss_kib_each"] / 1024 / session if session > 0 else float("inf"),
            informational=True,
        ),
        Figure(
            f"service_fork_request_{mb}mb",
            f"POST .../fork alone (a session made, the state carried), {mb} MB, median",
            "ms",
            f["fork_request_ms"],
            f["start_ms"],
            "a new session",
            f["fork_request_ms"] / f["start_ms"] if f["start_ms"] > 0 else float("inf"),
            informational=True,
        ),
        Figure(
            f"service_start_{mb}mb",
            f"a new session until it answers `pass` (beside the {mb} MB rows), median",
            "ms",
            f["start_ms"],
            f["rebuild_ms"],
            "new session + re-run",
            f["start_ms"] / f["rebuild_ms"] if f["rebuild_ms"] > 0 else float("inf"),
            informational=True,
        ),
    ]
    return rows


@dataclass(frozen=True)
class CheckpointFigures:
    """Each size's figures, by MB: the library's (``sizes``, as
    :func:`benchmarks.checkpoints.measure` gives them) and the service's (as
    :func:`benchmarks.checkpoints_service.measure_service` gives them)."""

    sizes: dict[int, dict[str, float]] = field(default_factory=dict)
    service: dict[int, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def figures(self) -> list[Figure]:
        rows: list[Figure] = []
        for mb, f in self.sizes.items():
            rows += _library(mb, f)
        for mb, f in self.service.items():
            rows += _service(mb, f)
        return rows


def missing_for_checkpoints() -> str | None:
    """Why the rows cannot be measured here, or None."""
    if importlib.util.find_spec("numpy") is None:
        return "checkpoints: skipped, the state is a numpy array and numpy is not installed"
    return None


def _notes(sandboxed: bool) -> list[str]:
    where = "sandboxed" if sandboxed else "without the sandbox (none on this host)"
    return [
        f"checkpoints over lmc serve: one server, {where}, the pool off (a fork never "
        "takes a warm session); a fork is timed until it answers a run",
        "a service fork is a new session in its own sandbox: the parent's variables are "
        "pickled, the file copied, and loaded by the new kernel, so it costs a session's "
        "start plus the state's transfer, and holds a copy of the state",
        "memory over lmc serve: the growth of the PSS of the server's whole process tree, "
        "divided by the checkpoints (or forks); 'ratio' elsewhere is ours / the re-run",
    ]


def checkpoints_phase(*, quick: bool = False) -> CheckpointFigures:
    """The library's and the service's figures at each size (small ones if ``quick``)."""
    # Imported here: it imports this package's modules, and runs beside it as a script.
    from ..checkpoints_service import measure_service, service_server

    sizes = QUICK_SIZES if quick else SIZES
    repeat = QUICK_REPEAT if quick else REPEAT
    library = {mb: measure(mb, repeat) for mb in sizes}
    missing = missing_for_service()
    if missing is not None:
        return CheckpointFigures(library, notes=[f"checkpoints over lmc serve: {missing}"])
    service: dict[int, dict[str, float]] = {}
    notes: list[str] = []
    try:
        with service_server(max(sizes), repeat) as server:
            notes += _notes(server.sandboxed)
            for mb in sizes:
                service[mb] = measure_service(server, mb, repeat)
    except (BenchError, LMCError, OSError) as exc:
        logger.warning("checkpoints over lmc serve failed", exc_info=True)
        notes.append(f"checkpoints over lmc serve: not measured past {len(service)} size(s): {exc}")
    return CheckpointFigures(library, service, notes)
