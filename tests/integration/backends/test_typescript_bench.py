"""The TypeScript row of lmc bench: a bare transpile-and-eval loop against our runner."""

from __future__ import annotations

import anyio
import pytest

from benchmarks.bench.languages import LANGUAGE_CASES
from benchmarks.bench.raw_node import TS_PRINT_ONE, RawNode, lmc_round_trips
from lmc_runtime import Computer
from lmc_runtime.backends.registry import Registry
from lmc_runtime.backends.typescript import typescript_dir

_STATUS = Registry().availability("typescript")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not _STATUS.available, reason=f"no TypeScript: {_STATUS.reason}"),
]


def test_the_raw_loop_transpiles_then_runs_and_times_each_round_trip() -> None:
    raw = RawNode(typescript=typescript_dir())
    try:
        assert raw.execute("const n: number = 1 + 1; console.log(n)", timeout=30) == "2\n"
        times = raw.round_trips(5, 30, code=TS_PRINT_ONE)
    finally:
        raw.close()
    assert len(times) == 5 and all(t > 0 for t in times)


def test_lmc_round_trips_on_the_typescript_backend() -> None:
    async def measure() -> list[float]:
        async with Computer() as computer:
            return await lmc_round_trips(
                computer, 5, timeout=30, code=TS_PRINT_ONE, language="typescript"
            )

    times = anyio.run(measure)
    assert len(times) == 5 and all(t > 0 for t in times)


def test_typescript_is_a_row_of_the_language_round_trips() -> None:
    case = next(c for c in LANGUAGE_CASES if c.language == "typescript")
    assert case.code == TS_PRINT_ONE and "transpileModule" in case.raw_label
