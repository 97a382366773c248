"""The history of the server's figures the console's server page draws: a
bounded ring of points, each with the rate and latencies of the runs since
the point before, read from a real :class:`ServiceMetrics`."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

from lmc_runtime.service.history import MetricsHistory, quantile
from lmc_runtime.service.metrics import ServiceMetrics

STATES = ["idle", "busy", "paused", "pooled", "pooled"]


def history(keep: int = 4) -> tuple[MetricsHistory, ServiceMetrics]:
    metrics = ServiceMetrics(lambda: iter(STATES))
    return MetricsHistory(metrics, lambda: iter(STATES), period=0.01, keep=keep), metrics


def test_a_point_has_the_rate_and_latencies_of_the_runs_since_the_last() -> None:
    kept, metrics = history()
    first = kept.add(kept.read())
    assert first["sessions"] == 3 and first["pool"] == 2
    assert first["runs_per_second"] is None and first["p50_ms"] is None
    for seconds in (0.02, 0.02, 0.02, 0.02, 3.0):
        metrics.execution_finished("python", "ok", seconds)
    reading = kept.read()
    assert reading.runs == 5
    second = kept.add(replace(reading, at=reading.at + 10))  # ten seconds later
    assert second["runs_per_second"] == pytest.approx(0.5, rel=0.01)
    # p50 in the (0.01, 0.025] bucket, p99 in the (2.5, 5] one.
    assert 10 < second["p50_ms"] <= 25
    assert 2500 < second["p99_ms"] <= 5000
    third = kept.add(replace(kept.read(), at=reading.at + 20))
    assert third["runs_per_second"] == 0 and third["p50_ms"] is None


def test_the_ring_keeps_the_last_points_and_answers_after_a_time() -> None:
    kept, _ = history(keep=4)
    base = kept.read()
    for n in range(10):
        kept.add(replace(base, at=1000.0 + n))
    assert [p["at"] for p in kept.points()] == [1006.0, 1007.0, 1008.0, 1009.0]
    assert [p["at"] for p in kept.points(after=1007.0)] == [1008.0, 1009.0]
    assert kept.points(after=1009.0) == []


def test_quantile_interpolates_in_the_bucket() -> None:
    inf = float("inf")
    before = ((0.1, 0.0), (1.0, 0.0), (inf, 0.0))
    after = ((0.1, 0.0), (1.0, 10.0), (inf, 10.0))
    assert quantile(before, after, 0.5) == pytest.approx(0.55)
    assert quantile(after, after, 0.5) is None
    beyond = ((0.1, 0.0), (1.0, 0.0), (inf, 4.0))
    assert quantile(before, beyond, 0.99) == 1.0  # the highest finite bound


def test_it_adds_a_point_every_period_until_cancelled() -> None:
    async def main() -> int:
        kept, _ = history(keep=100)
        with anyio.move_on_after(0.2):
            async with anyio.create_task_group() as tg:
                await tg.start(kept.run)
        return len(kept.points())

    assert 2 <= anyio.run(main) <= 40
