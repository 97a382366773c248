"""The code the benchmark runs, shared by the raw baseline and lmc-runtime."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = [
    "LINES_LARGE",
    "LOOP",
    "MEMORY_LINES",
    "MEMORY_LINES_QUICK",
    "PLOT",
    "PLOT_WARMUP",
    "PRINT_ONE",
    "BenchError",
    "print_lines",
    "printed_bytes",
    "timed",
]

#: The warm round trip and the cold start's first answer.
PRINT_ONE = "print(1)"

#: The throughput run.
LINES_LARGE = 200_000
#: The memory runs, both far past the output budget: whether memory stays flat
#: once output spills, ten times the lines for the same growth.
MEMORY_LINES = (2_000_000, 20_000_000)
MEMORY_LINES_QUICK = (1_000_000, 4_000_000)

#: Imported once in each kernel before the plot is timed.
PLOT_WARMUP = "import matplotlib.pyplot as plt"
PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()"

#: A loop-heavy cell: where the active-line sampler would cost the most.
LOOP = "s = 0\nfor i in range(3_000_000):\n    s += i % 7\n"


class BenchError(RuntimeError):
    """A benchmark run did not produce what it should have."""


def print_lines(count: int) -> str:
    """A cell that prints the numbers ``0 .. count - 1``, one a line."""
    return f"for i in range({count}):\n    print(i)\n"


def printed_bytes(count: int) -> int:
    """How many bytes :func:`print_lines` writes to stdout."""
    total = 0
    width, start = 1, 0
    while start < count:
        end = min(count, 10**width)
        total += (end - start) * (width + 1)
        start, width = end, width + 1
    return total


def timed(step: Callable[[], object], count: int) -> list[float]:
    """``count`` calls of ``step``, each timed, in seconds."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times
