"""The contender: lmc-runtime's :class:`Computer`, async core and sync layer.

The async functions run inside the event loop that hosts the Computer (a
blocking portal, see :mod:`.runner`), so their timings hold no thread hop.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import anyio

from lmc_runtime.computer import Computer
from lmc_runtime.config import Limits
from lmc_runtime.messages import Message
from lmc_runtime.replies import Status

from .rss import Method, RssGrowth
from .workloads import BenchError

__all__ = [
    "Outcome",
    "cold_start",
    "measure",
    "round_trips",
    "rss_growth_kib",
    "sync_round_trips",
]

LANGUAGE = "python"


@dataclass
class Outcome:
    """What one execution produced, as the benchmark needs it."""

    seconds: float = 0.0
    image_at: float | None = None
    output_chars: int = 0
    truncated: bool = False
    total_bytes: int | None = None
    status: str | None = None
    last_output: str = ""
    lines_seen: int = 0

    def see(self, message: Message, start: float) -> None:
        extras = message.extras or {}
        if message.type == "image" and message.format == "base64.png" and self.image_at is None:
            self.image_at = time.perf_counter() - start
        elif message.type == "console" and message.format == "output":
            content = str(message.content)
            self.output_chars += len(content)
            self.last_output = content[-500:]
            if message.status == Status.TRUNCATED:
                self.truncated = True
                total = extras.get("total_bytes")
                self.total_bytes = total if isinstance(total, int) else None
        elif message.is_final:
            self.status = message.status
        elif message.type == "console" and message.format == "active_line":
            self.lines_seen += 1

    def check(self, code: str) -> Outcome:
        if self.status != Status.OK:
            raise BenchError(
                f"lmc-runtime ended {code!r} with status {self.status!r}: {self.last_output!r}"
            )
        return self


async def _consume(stream: AsyncIterator[Message], start: float) -> Outcome:
    outcome = Outcome()
    async for message in stream:
        outcome.see(message, start)
    outcome.seconds = time.perf_counter() - start
    return outcome


async def measure(
    computer: Computer, code: str, *, timeout: float, language: str = LANGUAGE
) -> Outcome:
    """Run ``code`` once on ``computer``, timing it and reading every message."""
    with anyio.fail_after(timeout + 10):
        start = time.perf_counter()
        outcome = await _consume(computer.arun(language, code, timeout=timeout), start)
    return outcome.check(code)


async def round_trips(
    computer: Computer, code: str, count: int, *, timeout: float, language: str = LANGUAGE
) -> list[float]:
    """``count`` timed ``arun`` round trips, in seconds."""
    return [
        (await measure(computer, code, timeout=timeout, language=language)).seconds
        for _ in range(count)
    ]


def _sync_consume(stream: Iterator[Message], start: float) -> Outcome:
    outcome = Outcome()
    for message in stream:
        outcome.see(message, start)
    outcome.seconds = time.perf_counter() - start
    return outcome


def sync_round_trips(computer: Computer, code: str, count: int, *, timeout: float) -> list[float]:
    """``count`` timed round trips through the sync ``Computer.run``, in seconds."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        outcome = _sync_consume(computer.run(LANGUAGE, code, timeout=timeout), start)
        times.append(outcome.check(code).seconds)
    return times


async def cold_start(code: str, *, timeout: float, limits: Limits) -> float:
    """Seconds from ``Computer()`` to the end of its first ``code`` run."""
    with anyio.fail_after(2 * timeout):
        start = time.perf_counter()
        async with Computer(limits=limits) as computer:
            outcome = await _consume(computer.arun(LANGUAGE, code, timeout=timeout), start)
            outcome.check(code)
    return outcome.seconds


async def rss_growth_kib(
    computer: Computer, code: str, *, timeout: float, method: Method
) -> tuple[float, Outcome]:
    """How far this process's RSS rose, in KiB, while ``code`` ran on ``computer``."""
    with RssGrowth(method) as growth:
        outcome = await measure(computer, code, timeout=timeout)
    return growth.kib, outcome
