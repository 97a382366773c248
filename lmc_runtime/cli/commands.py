"""``lmc languages`` and ``lmc bench``."""

from __future__ import annotations

import argparse
import sys

from ..computer import Computer
from .extras import require_extra
from .interpreters import chosen_interpreters
from .sinks import write_json

__all__ = ["cmd_bench", "cmd_languages"]


def cmd_languages(args: argparse.Namespace) -> int:
    computer = Computer(**chosen_interpreters(args))
    for status in computer.languages.values():
        state = "available" if status.available else f"unavailable: {status.reason}"
        aliases = f" (also {', '.join(status.aliases)})" if status.aliases else ""
        sys.stdout.write(f"{status.name}{aliases}: {state}\n")
    return 0


def _bench_service(args: argparse.Namespace) -> int:
    """Only the service's rows: RemoteComputer on a real lmc serve vs in-process."""
    from dataclasses import asdict

    from ..bench import format_figures, run_service
    from ..bench.workloads import LINES_LARGE

    service, notes = run_service(quick=args.quick)
    rows = service.figures(LINES_LARGE) if service is not None else []
    if args.json:
        data = {"service": asdict(service) if service else None, "notes": notes}
        write_json(sys.stdout, {**data, "figures": [asdict(row) for row in rows]})
    else:
        sys.stdout.write(format_figures(rows, notes))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """The benchmark; its plot row needs matplotlib in the kernel, which runs on this
    Python (the ``[plot]`` extra)."""
    from ..bench import format_memory, format_report, run_benchmark, run_memory

    if args.only == "service":
        return _bench_service(args)
    if args.only != "memory":
        require_extra("lmc bench", "plot")

    if args.only == "memory":
        from dataclasses import asdict

        flat, notes = run_memory(quick=args.quick)
        if args.json:
            write_json(
                sys.stdout, {"flat_memory": asdict(flat), "passed": flat.passed, "notes": notes}
            )
        else:
            sys.stdout.write(format_memory(flat, notes))
        return 0
    report = run_benchmark(quick=args.quick)
    if args.json:
        write_json(sys.stdout, report.to_dict())
    else:
        sys.stdout.write(format_report(report))
    return 0
