"""``lmc bench``: lmc-runtime against raw jupyter-client on this machine.

``run_benchmark()`` measures, in one run, the warm ``print(1)`` round trip
(async core and sync layer), the cold start, the throughput of 200,000 printed
lines and the memory it takes, a matplotlib plot round trip and the cost of
active-line tracking; ``format_report()`` turns the :class:`BenchReport` into a
table with each figure's ratio to raw and its target. Progress goes to the
``lmc_runtime.bench`` loggers; nothing here prints.
"""

from __future__ import annotations

from .model import BenchReport, Figure, Timing
from .report import format_report
from .runner import run_benchmark

__all__ = ["BenchReport", "Figure", "Timing", "format_report", "run_benchmark"]
