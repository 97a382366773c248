"""The service's rows of the report: RemoteComputer against the in-process Computer."""

from __future__ import annotations

from dataclasses import dataclass

from .model import THROUGHPUT_MIN_RATIO, Figure, Timing

__all__ = ["SERVICE_ROUND_TRIP_MAX_RATIO", "ServiceFigures"]

#: How much slower a warm round trip through ``lmc serve`` may be than in-process,
#: as a ratio in the same run (an absolute bound moves with the host).
SERVICE_ROUND_TRIP_MAX_RATIO = 1.3


def _ratio(ours: float, base: float) -> float:
    return ours / base if base > 0 else float("inf")


@dataclass(frozen=True)
class ServiceFigures:
    """A RemoteComputer on a real ``lmc serve --no-sandbox`` against the in-process
    Computer: warm ``print(1)`` round trips of ``arun`` (in-process, over HTTP, over
    the WebSocket) and the 200k-line throughput in-process and over HTTP (lines/s)."""

    local: Timing
    http: Timing
    websocket: Timing
    throughput_local: float
    throughput_http: float

    def figures(self, lines: int) -> list[Figure]:
        rows = []
        for key, timing in (("http", self.http), ("websocket", self.websocket)):
            ratio = _ratio(timing.median_ms, self.local.median_ms)
            rows.append(
                Figure(
                    f"service_round_trip_{key}_median",
                    f"print(1) round trip, RemoteComputer over {key}, median",
                    "ms",
                    timing.median_ms,
                    self.local.median_ms,
                    "in-process",
                    ratio,
                    target=f"<= {SERVICE_ROUND_TRIP_MAX_RATIO:.2f}x",
                    passed=ratio <= SERVICE_ROUND_TRIP_MAX_RATIO,
                )
            )
        ratio = _ratio(self.throughput_http, self.throughput_local)
        rows.append(
            Figure(
                "service_throughput",
                f"{lines:,} printed lines through lmc serve (HTTP)",
                "lines/s",
                self.throughput_http,
                self.throughput_local,
                "in-process",
                ratio,
                target=f">= {THROUGHPUT_MIN_RATIO:.2f}x",
                passed=ratio >= THROUGHPUT_MIN_RATIO,
            )
        )
        return rows
