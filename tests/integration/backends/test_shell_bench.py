"""The shell benchmark drivers: raw bash on pexpect, and the same round trip through us."""

from __future__ import annotations

import anyio

from benchmarks.bench.raw_shell import RawShell, ours_shell_round_trips
from lmc_runtime import Computer


def test_raw_shell_round_trips_answer_echo_1() -> None:
    raw = RawShell()
    try:
        times = raw.round_trips(5, timeout=30)
    finally:
        raw.close()
    assert len(times) == 5 and all(t > 0 for t in times)


def test_ours_shell_round_trips_answer_echo_1() -> None:
    async def main() -> list[float]:
        async with Computer() as c:
            return await ours_shell_round_trips(c, 5, 30)

    times = anyio.run(main)
    assert len(times) == 5 and all(t > 0 for t in times)
