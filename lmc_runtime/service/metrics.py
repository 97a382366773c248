"""``/metrics``: the service's figures in the Prometheus text format.

One :class:`ServiceMetrics` per application, on a registry of its own (no
module globals):

* ``lmc_sessions{state}``: sessions by state (read from the manager at each
  scrape; ``pooled`` for warm sessions no client holds);
* ``lmc_sessions_created_total``: sessions handed to clients;
* ``lmc_executions_total{language,status}``: executions by final status;
* ``lmc_execution_seconds{language}``: their wall time (a histogram);
* ``lmc_limit_hits_total{kind}``: executions that ran into a limit, by kind
  (``memory``, ``cpu``, ``processes``, ``disk``, ``file_size``, ``wall``,
  ``output``), each kind once per execution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["LIMIT_STATUSES", "ServiceMetrics", "limit_kinds"]

#: Final statuses that mean a limit stopped the code, and the kind of limit.
LIMIT_STATUSES: Mapping[str, str] = {
    "memory_limit": "memory",
    "cpu_limit": "cpu",
    "process_limit": "processes",
    "disk_limit": "disk",
    "file_size_limit": "file_size",
    "timeout": "wall",
    "truncated": "output",
}


class _SessionStates(Collector):
    """``lmc_sessions{state}``, counted when scraped."""

    def __init__(self, states: Callable[[], Iterable[str]]) -> None:
        self._states = states

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily("lmc_sessions", "Sessions by state", labels=["state"])
        counts = dict.fromkeys(("starting", "idle", "busy", "paused", "closing", "pooled"), 0)
        for state in self._states():
            counts[state] = counts.get(state, 0) + 1
        for state, count in counts.items():
            family.add_metric([state], count)
        yield family


class ServiceMetrics:
    """The counters and histograms of one service."""

    def __init__(self, states: Callable[[], Iterable[str]]) -> None:
        """``states`` yields the state of every session at the time of a scrape
        (``"pooled"`` for warm sessions no client holds)."""
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(_SessionStates(states))
        self.sessions_created = Counter(
            "lmc_sessions_created", "Sessions handed to clients", registry=self.registry
        )
        self.executions = Counter(
            "lmc_executions",
            "Executions by language and final status",
            ["language", "status"],
            registry=self.registry,
        )
        self.durations = Histogram(
            "lmc_execution_seconds",
            "Wall time of executions, from the request to the final message",
            ["language"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
            registry=self.registry,
        )
        self.limit_hits = Counter(
            "lmc_limit_hits",
            "Executions stopped by a limit, by kind",
            ["kind"],
            registry=self.registry,
        )

    def session_created(self) -> None:
        self.sessions_created.inc()

    def execution_finished(
        self,
        language: str,
        status: str | None,
        seconds: float,
        *,
        limits: Iterable[str] = (),
        truncated: bool = False,
    ) -> None:
        """Count one execution that ended with ``status`` after ``seconds``.

        ``limits``: every limit it ran into (the final message's
        ``extras.limits``; its ``status`` is only the first of them);
        ``truncated``: its output was cut (a notice, not the final status).
        Each kind of limit counts once per execution."""
        status = status or "unknown"
        self.executions.labels(language=language, status=status).inc()
        self.durations.labels(language=language).observe(seconds)
        for kind in limit_kinds(status, limits, truncated=truncated):
            self.limit_hits.labels(kind=kind).inc()


def limit_kinds(status: str, limits: Iterable[str] = (), *, truncated: bool = False) -> list[str]:
    """The kinds of limit an execution ran into, each once, in a stable order."""
    statuses = {status, *limits}
    if truncated:
        statuses.add("truncated")
    kinds = {LIMIT_STATUSES[s] for s in statuses if s in LIMIT_STATUSES}
    return sorted(kinds)
