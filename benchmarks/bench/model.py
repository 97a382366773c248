"""The benchmark's figures: samples in, a :class:`BenchReport` with its targets out."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .rss import Method

if TYPE_CHECKING:
    from .checkpoints import CheckpointFigures
    from .service_figures import ServiceFigures

__all__ = [
    "ACTIVE_LINE_MAX_OVERHEAD_PCT",
    "FLAT_MEMORY_MAX_EXTRA_MIB",
    "PLOT_MAX_RATIO",
    "ROUND_TRIP_MAX_RATIO",
    "SYNC_ROUND_TRIP_MAX_RATIO",
    "THROUGHPUT_MIN_RATIO",
    "BenchReport",
    "Figure",
    "FlatMemory",
    "LanguageTrip",
    "MemoryGrowth",
    "Timing",
]

ROUND_TRIP_MAX_RATIO = 1.15
#: The sync ``Computer.run``'s round trip against raw jupyter-client's.
SYNC_ROUND_TRIP_MAX_RATIO = 1.10
THROUGHPUT_MIN_RATIO = 0.5
#: How much more the large memory run may grow than the small one, in MiB: an
#: absolute bound, since the ratio of two small growths is mostly noise.
FLAT_MEMORY_MAX_EXTRA_MIB = 16.0
PLOT_MAX_RATIO = 1.15  # informational
ACTIVE_LINE_MAX_OVERHEAD_PCT = 5.0


def _percentile(ordered: Sequence[float], fraction: float) -> float:
    """Linear-interpolated percentile of already sorted values."""
    position = (len(ordered) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Timing:
    """Median and p90 of repeated timings, in milliseconds."""

    median_ms: float
    p90_ms: float
    samples: int

    @classmethod
    def from_seconds(cls, samples: Sequence[float]) -> Timing:
        if not samples:
            raise ValueError("no samples")
        ordered = sorted(s * 1000.0 for s in samples)
        return cls(statistics.median(ordered), _percentile(ordered, 0.9), len(ordered))


@dataclass(frozen=True)
class Figure:
    """One row of the report: our value, the baseline, their ratio and the target."""

    key: str
    name: str
    unit: str
    ours: float
    baseline: float | None
    baseline_label: str
    ratio: float | None
    ratio_style: Literal["x", "%"] = "x"
    target: str = ""
    passed: bool | None = None
    informational: bool = False


@dataclass(frozen=True)
class LanguageTrip:
    """A warm round trip in another language: ours against its raw program."""

    language: str
    code: str
    raw_label: str
    raw: Timing
    ours: Timing

    def figure(self) -> Figure:
        ratio = _ratio(self.ours.median_ms, self.raw.median_ms)
        return Figure(
            f"round_trip_{self.language}_median",
            f"{self.code} round trip ({self.language}), arun, median",
            "ms",
            self.ours.median_ms,
            self.raw.median_ms,
            self.raw_label,
            ratio,
        )


@dataclass(frozen=True)
class MemoryGrowth:
    """How much this process's RSS grew while a cell printed ``lines`` lines, per run (KiB)."""

    lines: int
    growth_kib: list[float]
    median_kib: float

    @classmethod
    def of(cls, lines: int, growth_kib: Sequence[float]) -> MemoryGrowth:
        if not growth_kib:
            raise ValueError("no samples")
        return cls(lines, list(growth_kib), statistics.median(growth_kib))

    @property
    def label(self) -> str:
        """The line count, short: ``2M lines``, ``200k lines``."""
        if self.lines % 1_000_000 == 0:
            return f"{self.lines // 1_000_000}M lines"
        if self.lines % 1000 == 0:
            return f"{self.lines // 1000}k lines"
        return f"{self.lines:,} lines"


@dataclass(frozen=True)
class FlatMemory:
    """Whether memory stays flat once output spills: the RSS growth of the process
    running the Computer while one cell prints ``small.lines``, then ``large.lines``.

    ``method`` says how the growth was read: ``"vmhwm"`` (the peak ``VmHWM`` after
    the run minus ``VmRSS`` before it, the peak reset through
    ``/proc/self/clear_refs``) or ``"sampled"`` (``VmRSS`` polled during the run, a
    lower bound when the peak cannot be reset). In JSON: ``flat_memory`` with
    ``method``, ``max_extra_mib``, and ``small`` and ``large``, each ``lines``,
    ``growth_kib`` (every run, in run order) and ``median_kib``.
    """

    method: Method
    small: MemoryGrowth
    large: MemoryGrowth
    max_extra_mib: float = FLAT_MEMORY_MAX_EXTRA_MIB

    @property
    def extra_mib(self) -> float:
        """How much more the large run grew than the small one (medians), in MiB."""
        return (self.large.median_kib - self.small.median_kib) / 1024

    @property
    def passed(self) -> bool:
        return self.extra_mib <= self.max_extra_mib

    def figure(self) -> Figure:
        return Figure(
            "flat_memory",
            f"RSS growth, {self.large.label}, median of {len(self.large.growth_kib)}",
            "MiB",
            self.large.median_kib / 1024,
            self.small.median_kib / 1024,
            self.small.label,
            _ratio(self.large.median_kib, self.small.median_kib),
            target=f"<= {self.small.label} + {self.max_extra_mib:g} MiB",
            passed=self.passed,
        )


def _ratio(ours: float, base: float) -> float:
    return ours / base if base > 0 else math.inf


def _vs_raw(
    key: str,
    name: str,
    unit: str,
    ours: float,
    raw: float,
    *,
    most: float | None = None,
    least: float | None = None,
    informational: bool = False,
) -> Figure:
    """A row against the raw baseline, whose ratio is at ``most`` or ``least`` if given."""
    ratio = _ratio(ours, raw)
    target, passed = "", None
    if most is not None:
        target, passed = f"<= {most:.2f}x", ratio <= most
    elif least is not None:
        target, passed = f">= {least:.2f}x", ratio >= least
    return Figure(
        key,
        name,
        unit,
        ours,
        raw,
        "raw",
        ratio,
        target=target,
        passed=passed,
        informational=informational,
    )


@dataclass
class BenchReport:
    """Every figure of one benchmark run (times in ms, throughput in lines/s, memory
    in KiB, growth of this process's RSS: see :class:`FlatMemory`)."""

    quick: bool
    repeat: int
    round_trip_raw: Timing
    round_trip_async: Timing
    round_trip_sync: Timing
    cold_start_raw: Timing
    cold_start_ours: Timing
    lines: int
    throughput_raw: float
    throughput_ours: float
    flat_memory: FlatMemory
    plot_raw: Timing
    plot_ours: Timing
    loop_tracked: Timing
    loop_untracked: Timing
    #: How much the slower of the two loop kernels trailed the faster, modes pooled.
    loop_kernel_spread_pct: float = 0.0
    #: Warm round trips in the other languages, each against its raw program.
    languages: list[LanguageTrip] = field(default_factory=list)
    #: The service's rows (None when the [serve] and [client] extras are missing).
    service: ServiceFigures | None = None
    #: Checkpoint, rollback and fork (None when numpy is missing).
    checkpoints: CheckpointFigures | None = None
    duration_s: float = 0.0
    environment: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def active_line_overhead_pct(self) -> float:
        base = self.loop_untracked.median_ms
        return (self.loop_tracked.median_ms / base - 1.0) * 100.0 if base > 0 else math.inf

    def figures(self) -> list[Figure]:
        """The report's rows, each checked against its target."""
        overhead = self.active_line_overhead_pct
        trip, sync = self.round_trip_async, self.round_trip_sync
        raw, cold = self.round_trip_raw, (self.cold_start_ours, self.cold_start_raw)
        return [
            _vs_raw(
                "round_trip_async_median",
                "print(1) round trip, arun, median",
                "ms",
                trip.median_ms,
                raw.median_ms,
                most=ROUND_TRIP_MAX_RATIO,
            ),
            _vs_raw(
                "round_trip_async_p90",
                "print(1) round trip, arun, p90",
                "ms",
                trip.p90_ms,
                raw.p90_ms,
            ),
            _vs_raw(
                "round_trip_sync_median",
                "print(1) round trip, sync run, median",
                "ms",
                sync.median_ms,
                raw.median_ms,
                most=SYNC_ROUND_TRIP_MAX_RATIO,
            ),
            _vs_raw(
                "round_trip_sync_p90",
                "print(1) round trip, sync run, p90",
                "ms",
                sync.p90_ms,
                raw.p90_ms,
            ),
            _vs_raw(
                "cold_start",
                "cold start to first print(1), median",
                "ms",
                cold[0].median_ms,
                cold[1].median_ms,
            ),
            _vs_raw(
                "throughput",
                f"{self.lines:,} printed lines, throughput",
                "lines/s",
                self.throughput_ours,
                self.throughput_raw,
                least=THROUGHPUT_MIN_RATIO,
            ),
            self.flat_memory.figure(),
            _vs_raw(
                "plot",
                "plot round trip to PNG, median",
                "ms",
                self.plot_ours.median_ms,
                self.plot_raw.median_ms,
                most=PLOT_MAX_RATIO,
                informational=True,
            ),
            Figure(
                "active_line_overhead",
                "3M-iteration loop, active line on",
                "ms",
                self.loop_tracked.median_ms,
                self.loop_untracked.median_ms,
                "line off",
                overhead,
                ratio_style="%",
                target=f"<= +{ACTIVE_LINE_MAX_OVERHEAD_PCT:g}%",
                passed=overhead <= ACTIVE_LINE_MAX_OVERHEAD_PCT,
            ),
            *(trip.figure() for trip in self.languages),
            *(self.service.figures(self.lines) if self.service is not None else []),
            *(self.checkpoints.figures() if self.checkpoints is not None else []),
        ]

    @property
    def passed(self) -> bool:
        """Whether every hard (non-informational) target was met."""
        return all(f.passed for f in self.figures() if f.passed is not None and not f.informational)

    def to_dict(self) -> dict[str, Any]:
        """Every figure as plain JSON-able data, with the checked rows and the verdict."""
        data = asdict(self)
        data["active_line_overhead_pct"] = self.active_line_overhead_pct
        data["figures"] = [asdict(f) for f in self.figures()]
        data["passed"] = self.passed
        cleaned: dict[str, Any] = _json_safe(data)
        return cleaned


def _json_safe(value: Any) -> Any:
    """``value`` with infinities and NaNs (not valid JSON) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value
