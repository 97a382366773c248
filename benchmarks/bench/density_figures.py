"""The density section's figures (``lmc bench --only density``) and its table."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from .pss import KindTotal

__all__ = [
    "BURST_MAX_P50_S",
    "COLD_START_MAX_MS",
    "IDLE_PSS_MAX_MIB",
    "DensityAt",
    "DensityFigures",
    "KindFigure",
    "Starts",
    "format_density",
]

#: The targets: an idle session's PSS, a cold start, a burst's median.
IDLE_PSS_MAX_MIB = 12.0
COLD_START_MAX_MS = 100.0
BURST_MAX_P50_S = 1.5

_KIB_PER_MIB = 1024.0


@dataclass(frozen=True)
class KindFigure:
    """The processes of one kind in a server's tree, in MiB each."""

    kind: str
    count: int
    pss_mib: float
    rss_mib: float
    private_dirty_mib: float

    @classmethod
    def of(cls, kind: str, total: KindTotal) -> KindFigure:
        each = total.count * _KIB_PER_MIB
        return cls(
            kind, total.count, total.pss / each, total.rss / each, total.private_dirty / each
        )


@dataclass(frozen=True)
class DensityAt:
    """A server (lmc serve, or a Jupyter Kernel Gateway) holding ``sessions`` idle
    sessions that each ran ``print(1)``: its whole tree's PSS per session, the
    server's own growth included, and the breakdown by kind."""

    server: str
    sessions: int
    pss_per_session_mib: float
    server_growth_mib: float
    kinds: list[KindFigure] = field(default_factory=list)

    @property
    def sessions_in_20_gib(self) -> int:
        return int(20 * 1024 / self.pss_per_session_mib) if self.pss_per_session_mib else 0


@dataclass(frozen=True)
class Starts:
    """Session creations, each to its first ``print(1)`` result: their times (s)
    and the CPU the server's tree spent on each."""

    how: str
    count: int
    p50_ms: float
    p90_ms: float
    wall_s: float
    cpu_ms_per_session: float

    @classmethod
    def of(cls, how: str, seconds: Sequence[float], wall_s: float, cpu_s: float) -> Starts:
        ms = sorted(s * 1000 for s in seconds)
        p90 = statistics.quantiles(ms, n=10)[-1] if len(ms) > 1 else ms[0]
        per = cpu_s * 1000 / len(ms)
        return cls(how, len(ms), statistics.median(ms), p90, wall_s, per)


@dataclass
class DensityFigures:
    """One run of the density section."""

    sandboxed: bool
    at: list[DensityAt] = field(default_factory=list)
    cold: Starts | None = None
    burst: Starts | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        ours = [a for a in self.at if a.server == "lmc serve"]
        return (
            bool(ours)
            and max(a.pss_per_session_mib for a in ours) <= IDLE_PSS_MAX_MIB
            and self.cold is not None
            and self.cold.p50_ms <= COLD_START_MAX_MS
            and (self.burst is None or self.burst.p50_ms <= BURST_MAX_P50_S * 1000)
        )


def _verdict(ok: bool) -> str:
    return "ok" if ok else "over"


def format_density(figures: DensityFigures) -> str:
    """The section as text: PSS per session at each N, the breakdown, the starts."""
    lines = ["Density (idle sessions that each printed 1; PSS of the server's whole tree)"]
    for at in figures.at:
        lines.append(
            f"  {at.server:24} N={at.sessions:<4} {at.pss_per_session_mib:6.2f} MiB/session "
            f"(server growth {at.server_growth_mib:.1f} MiB; {at.sessions_in_20_gib:,} in 20 GiB)"
            + (
                f"  target <= {IDLE_PSS_MAX_MIB:g}: "
                + _verdict(at.pss_per_session_mib <= IDLE_PSS_MAX_MIB)
                if at.server == "lmc serve"
                else ""
            )
        )
        for kind in at.kinds:
            lines.append(
                f"      {kind.kind:16} x{kind.count:<4} PSS {kind.pss_mib:6.2f}  "
                f"RSS {kind.rss_mib:6.2f}  Private_Dirty {kind.private_dirty_mib:6.2f} MiB each"
            )
    targets = {"cold": COLD_START_MAX_MS, "burst": BURST_MAX_P50_S * 1000}
    for name, starts in (("cold", figures.cold), ("burst", figures.burst)):
        if starts is None:
            continue
        lines.append(
            f"  {name:6} {starts.how}: p50 {starts.p50_ms:.0f} ms, p90 {starts.p90_ms:.0f} ms, "
            f"{starts.count} in {starts.wall_s:.1f} s, CPU {starts.cpu_ms_per_session:.0f} ms "
            f"a session  target p50 <= {targets[name]:g} ms: "
            + _verdict(starts.p50_ms <= targets[name])
        )
    lines += [f"note: {note}" for note in figures.notes]
    return "\n".join(lines) + "\n"
