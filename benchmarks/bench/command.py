"""What ``lmc bench`` runs once it has found this folder: the benchmark, or one part
of it (``--only memory|service|e2b|density|egress|checkpoints``), printed as a
table or as one JSON object."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from lmc_runtime.cli.extras import require_extra
from lmc_runtime.cli.sinks import write_json

from .report import format_figures, format_memory, format_report
from .runner import run_benchmark, run_memory, run_service
from .workloads import LINES_LARGE

__all__ = ["run"]


def _service(args: argparse.Namespace) -> int:
    """Only the service's rows: RemoteComputer on a real lmc serve vs in-process."""
    service, notes = run_service(quick=args.quick)
    rows = service.figures(LINES_LARGE) if service is not None else []
    if args.json:
        data = {"service": asdict(service) if service else None, "notes": notes}
        write_json(sys.stdout, {**data, "figures": [asdict(row) for row in rows]})
    else:
        sys.stdout.write(format_figures(rows, notes))
    return 0


def _e2b(args: argparse.Namespace) -> int:
    """Only the E2B rows: E2B's SDK against RemoteComputer on one real lmc serve."""
    from .e2b import e2b_phase, missing_for_e2b

    missing = missing_for_e2b()
    figures = e2b_phase(quick=args.quick) if missing is None else None
    rows = figures.figures() if figures is not None else []
    notes = (
        [missing]
        if missing
        else [
            "e2b: E2B's Python SDK and RemoteComputer on one lmc serve with its defaults "
            "(the sandbox when this host gives it), taking turns; 'ratio' is E2B's / lmc's"
        ]
    )
    if args.json:
        data = {"e2b": asdict(figures) if figures else None, "notes": notes}
        write_json(sys.stdout, {**data, "figures": [asdict(row) for row in rows]})
    else:
        sys.stdout.write(format_figures(rows, notes))
    return 0


def _egress(args: argparse.Namespace) -> int:
    """Only the egress rows: through a session's egress policy against direct."""
    from .egress import egress_phase, missing_for_egress

    missing = missing_for_egress()
    figures = egress_phase(quick=args.quick) if missing is None else None
    rows = figures.figures() if figures is not None else []
    notes = (
        [missing]
        if missing
        else [
            "egress: the test internet's HTTPS server in a network namespace; 'ratio' is "
            "through the policy's / direct (session creation: with a policy's / without)"
        ]
    )
    if args.json:
        data = {"egress": asdict(figures) if figures else None, "notes": notes}
        write_json(sys.stdout, {**data, "figures": [asdict(row) for row in rows]})
    else:
        sys.stdout.write(format_figures(rows, notes))
    return 0


def _checkpoints(args: argparse.Namespace) -> int:
    """Only the checkpoint rows, the library's and the service's: checkpoint,
    rollback and fork against re-running."""
    from .checkpoints import checkpoints_phase, missing_for_checkpoints

    missing = missing_for_checkpoints()
    figures = checkpoints_phase(quick=args.quick) if missing is None else None
    rows = figures.figures() if figures is not None else []
    notes = figures.notes if figures is not None else [missing] if missing else []
    if args.json:
        data = {"checkpoints": asdict(figures) if figures else None, "notes": notes}
        write_json(sys.stdout, {**data, "figures": [asdict(row) for row in rows]})
    else:
        sys.stdout.write(format_figures(rows, notes))
    return 0


def _memory(args: argparse.Namespace) -> int:
    flat, notes = run_memory(quick=args.quick)
    if args.json:
        write_json(sys.stdout, {"flat_memory": asdict(flat), "passed": flat.passed, "notes": notes})
    else:
        sys.stdout.write(format_memory(flat, notes))
    return 0


def _density(args: argparse.Namespace) -> int:
    """Only the density rows: PSS per idle session, cold starts, the burst."""
    from .density import density_phase
    from .density_figures import format_density

    figures = density_phase(quick=args.quick, large=getattr(args, "large", False))
    if args.json:
        write_json(sys.stdout, {"density": asdict(figures), "passed": figures.passed})
    else:
        sys.stdout.write(format_density(figures))
    return 0


def run(args: argparse.Namespace) -> int:
    """The benchmark; its plot row needs matplotlib in the kernel, which runs on this
    Python (the ``[plot]`` extra)."""
    if args.only == "service":
        return _service(args)
    if args.only == "memory":
        return _memory(args)
    if args.only == "e2b":
        return _e2b(args)
    if args.only == "density":
        return _density(args)
    if args.only == "egress":
        return _egress(args)
    if args.only == "checkpoints":
        return _checkpoints(args)
    require_extra("lmc bench", "plot")
    report = run_benchmark(quick=args.quick)
    if args.json:
        write_json(sys.stdout, report.to_dict())
    else:
        sys.stdout.write(format_report(report))
    return 0
