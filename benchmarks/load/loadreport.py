"""The report of a timed mixed load (:mod:`.loadmix`): its samples and verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .census import Census
from .loadwire import ms, percentile

__all__ = ["MixReport", "Sample"]


@dataclass(frozen=True)
class Sample:
    """The server tree at one moment of the load (seconds since it began)."""

    at: float
    census: Census


@dataclass
class MixReport:
    """What one timed mixed load measured."""

    sessions: int
    languages: list[str]
    duration: float
    flat_percent: float
    executions: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    start: Census | None = None
    warm: Sample | None = None
    after: Census | None = None

    def _middle(self) -> Sample | None:
        if not self.samples:
            return None
        return min(self.samples, key=lambda sample: abs(sample.at - self.duration / 2))

    @property
    def rss_growth_percent(self) -> float | None:
        """How far the RSS at the end of the load is above the value after warm-up."""
        if self.warm is None or not self.samples or not self.warm.census.rss_bytes:
            return None
        end = self.samples[-1].census.rss_bytes
        return (end / self.warm.census.rss_bytes - 1) * 100

    @property
    def flat(self) -> bool | None:
        growth = self.rss_growth_percent
        return None if growth is None else growth <= self.flat_percent

    def leaked(self) -> dict[str, tuple[int, int]]:
        """Processes or descriptors more after the deletes than at the start."""
        if self.start is None or self.after is None:
            return {}
        above = self.after.above(self.start)
        return {name: above[name] for name in ("processes", "fds") if name in above}

    def to_dict(self) -> dict[str, Any]:
        middle = self._middle()
        growth = self.rss_growth_percent
        return {
            "sessions": self.sessions,
            "languages": self.languages,
            "duration_s": self.duration,
            "executions": self.executions,
            "errors": len(self.errors),
            "error_samples": self.errors[:5],
            "p50_ms": ms(percentile(self.latencies, 50)),
            "p99_ms": ms(percentile(self.latencies, 99)),
            "rss_mib": {
                "start": _mib(self.start),
                "warm": _mib(self.warm.census if self.warm else None),
                "warm_at_s": round(self.warm.at, 1) if self.warm else None,
                "middle": _mib(middle.census if middle else None),
                "end": _mib(self.samples[-1].census if self.samples else None),
            },
            "rss_growth_percent": None if growth is None else round(growth, 1),
            "flat": self.flat,
            "flat_percent": self.flat_percent,
            "start": self.start.to_dict() if self.start else None,
            "after_delete": self.after.to_dict() if self.after else None,
            "leaked": {name: list(counts) for name, counts in self.leaked().items()},
        }


def _mib(census: Census | None) -> float | None:
    return None if census is None else round(census.rss_bytes / 2**20, 1)
