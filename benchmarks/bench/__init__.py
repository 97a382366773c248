"""``lmc bench``: lmc-runtime against raw jupyter-client on this machine.

``run_benchmark()`` measures, in one run, the warm ``print(1)`` round trip
(async core and sync layer), the cold start, the throughput of 200,000 printed
lines, whether memory stays flat as output grows past the budget, a matplotlib
plot round trip, the cost of active-line tracking and, with the [serve] and
[client] extras, RemoteComputer through a real ``lmc serve`` against the
in-process Computer; ``format_report()`` turns
the :class:`BenchReport` into a table with each figure's ratio to raw and its
target. Progress goes to the ``benchmarks.bench`` loggers; nothing here prints
(:func:`.command.run` is what ``lmc bench`` calls).
"""

from __future__ import annotations

from .model import BenchReport, Figure, FlatMemory, Timing
from .report import format_figures, format_memory, format_report
from .runner import run_benchmark, run_memory, run_service
from .service_figures import ServiceFigures

__all__ = [
    "BenchReport",
    "Figure",
    "FlatMemory",
    "ServiceFigures",
    "Timing",
    "format_figures",
    "format_memory",
    "format_report",
    "run_benchmark",
    "run_memory",
    "run_service",
]
