"""The node benchmark drivers run real node and time real round trips."""

from __future__ import annotations

import shutil

import anyio
import pytest

from benchmarks.bench.raw_node import RawNode, lmc_round_trips
from lmc_runtime import Computer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


def test_raw_node_runs_the_code_and_times_each_round_trip() -> None:
    raw = RawNode()
    try:
        assert raw.execute("console.log(1 + 1)", timeout=30) == "2\n"
        times = raw.round_trips(5, 30)
    finally:
        raw.close()
    assert len(times) == 5 and all(t > 0 for t in times)


def test_lmc_round_trips_on_the_javascript_backend() -> None:
    async def measure() -> list[float]:
        async with Computer() as computer:
            return await lmc_round_trips(computer, 5, timeout=30)

    times = anyio.run(measure)
    assert len(times) == 5 and all(t > 0 for t in times)
