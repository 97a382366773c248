"""``GET /v1/metrics/history``: the server's figures over the last minutes.

The console's server page draws client sessions, warm sessions in the pool,
runs per second and p50/p99 run latency over the last minutes. A page only
sees what happened while it was open if it reads ``/metrics`` itself, so the
server keeps the history: one :class:`MetricsHistory` per application (in its
``app.state``, run in its lifespan), a ring of :data:`KEEP` points, one every
:data:`PERIOD` seconds (15 minutes), read from the service's own metrics.

A point's rate and latencies are those of the runs between it and the point
before (the latencies interpolated in the buckets of the
``lmc_execution_seconds`` histogram, as Prometheus' ``histogram_quantile``
does); ``None`` when there is no point before or no run between them.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
from anyio.abc import TaskStatus
from fastapi import APIRouter, Depends, Query, Request

from .metrics import ServiceMetrics
from .routes import require_token

__all__ = ["KEEP", "PERIOD", "MetricsHistory", "Reading", "history_router", "quantile"]

logger = logging.getLogger(__name__)

#: Seconds between two points, and how many points are kept (15 minutes).
PERIOD = 5.0
KEEP = 180

#: ``(upper bound, runs at most that long)``, cumulative, the last bound infinite.
Buckets = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Reading:
    """The service's counters at one time."""

    at: float
    runs: float
    buckets: Buckets
    sessions: int
    pool: int


def quantile(before: Buckets, after: Buckets, q: float) -> float | None:
    """The ``q``-quantile, in seconds, of the runs counted between two readings;
    None if there were none."""
    counts = [(bound, count - dict(before).get(bound, 0.0)) for bound, count in after]
    runs = counts[-1][1] if counts else 0.0
    if runs <= 0:
        return None
    rank = q * runs
    lower, below = 0.0, 0.0
    for bound, count in counts:
        if count >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * (rank - below) / max(count - below, 1e-9)
        lower, below = bound, count
    return lower


class MetricsHistory:
    """The last :data:`KEEP` points of the service's figures."""

    def __init__(
        self,
        metrics: ServiceMetrics,
        states: Callable[[], Iterable[str]],
        *,
        period: float = PERIOD,
        keep: int = KEEP,
    ) -> None:
        """``states``: the state of every session, ``"pooled"`` for a warm one
        (what ``lmc_sessions`` counts)."""
        self.period = period
        self.keep = keep
        self._metrics = metrics
        self._states = states
        self._points: deque[dict[str, Any]] = deque(maxlen=keep)
        self._last: Reading | None = None

    def read(self) -> Reading:
        """The service's counters now."""
        runs = 0.0
        for family in self._metrics.executions.collect():
            runs += sum(s.value for s in family.samples if s.name.endswith("_total"))
        by_bound: dict[float, float] = {}
        for family in self._metrics.durations.collect():
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    bound = float(sample.labels["le"])
                    by_bound[bound] = by_bound.get(bound, 0.0) + sample.value
        states = list(self._states())
        pool = states.count("pooled")
        return Reading(time.time(), runs, tuple(sorted(by_bound.items())), len(states) - pool, pool)

    def add(self, reading: Reading) -> dict[str, Any]:
        """Add the point of ``reading`` (its rate and latencies since the last one)."""
        point: dict[str, Any] = {
            "at": round(reading.at, 3),
            "sessions": reading.sessions,
            "pool": reading.pool,
            "runs_per_second": None,
            "p50_ms": None,
            "p99_ms": None,
        }
        last, self._last = self._last, reading
        if last is not None and reading.at > last.at:
            point["runs_per_second"] = round((reading.runs - last.runs) / (reading.at - last.at), 4)
            for name, q in (("p50_ms", 0.5), ("p99_ms", 0.99)):
                seconds = quantile(last.buckets, reading.buckets, q)
                point[name] = None if seconds is None else round(seconds * 1000, 3)
        self._points.append(point)
        return point

    def points(self, after: float | None = None) -> list[dict[str, Any]]:
        """The points kept, oldest first; only those later than ``after`` if given."""
        return [p for p in self._points if after is None or p["at"] > after]

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Add a point now and every :attr:`period` seconds, until cancelled."""
        task_status.started()
        while True:
            self.add(self.read())
            await anyio.sleep(self.period)


def history_of(request: Request) -> MetricsHistory:
    history = request.app.state.metrics_history
    assert isinstance(history, MetricsHistory)
    return history


def history_router() -> APIRouter:
    """The route of ``GET /v1/metrics/history`` (the bearer token needed)."""
    router = APIRouter(prefix="/v1", dependencies=[Depends(require_token)])

    @router.get("/metrics/history")
    async def metrics_history(
        request: Request, after: Annotated[float | None, Query(ge=0)] = None
    ) -> dict[str, Any]:
        """The server's figures over the last minutes, oldest first: a point every
        ``period`` seconds, ``keep`` at the most (those later than ``after`` only,
        when given): client sessions, warm sessions in the pool, runs per second
        and p50/p99 run latency in milliseconds since the point before."""
        history = history_of(request)
        return {"period": history.period, "keep": history.keep, "points": history.points(after)}

    return router
