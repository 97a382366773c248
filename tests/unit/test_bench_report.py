"""BenchReport and format_report on hand-made figures: no kernels."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bench import BenchReport, FlatMemory, Timing, format_memory, format_report
from benchmarks.bench.model import MemoryGrowth


def _ms(median: float, p90: float | None = None, samples: int = 10) -> Timing:
    return Timing(median, median if p90 is None else p90, samples)


def _flat(small: list[float], large: list[float]) -> FlatMemory:
    """Growths in MiB, run by run, of 2M and 20M printed lines."""
    return FlatMemory(
        "vmhwm",
        MemoryGrowth.of(2_000_000, [m * 1024 for m in small]),
        MemoryGrowth.of(20_000_000, [m * 1024 for m in large]),
    )


def make_report(**changes: Any) -> BenchReport:
    report = BenchReport(
        quick=True,
        repeat=30,
        round_trip_raw=_ms(2.0, 2.5, 30),
        round_trip_async=_ms(2.2, 2.8, 30),
        round_trip_sync=_ms(2.18, 3.1, 30),
        cold_start_raw=_ms(700.0, samples=1),
        cold_start_ours=_ms(400.0, samples=1),
        lines=200_000,
        throughput_raw=400_000.0,
        throughput_ours=300_000.0,
        flat_memory=_flat([2.0, 1.5, 3.0], [2.5, 2.0, 9.0]),
        plot_raw=_ms(50.0, samples=3),
        plot_ours=_ms(52.0, samples=3),
        loop_tracked=_ms(181.0, samples=4),
        loop_untracked=_ms(180.0, samples=4),
        loop_kernel_spread_pct=3.0,
        duration_s=18.4,
        environment={"python": "3.11.7", "cpus": "2"},
        notes=["a note"],
    )
    return dataclasses.replace(report, **changes)


def _result(text: str, name: str) -> str:
    (line,) = [ln for ln in text.splitlines() if ln.startswith(name)]
    return line


def test_all_targets_met() -> None:
    report = make_report()
    assert report.passed
    text = format_report(report)
    assert text.endswith("\n")
    for header in ("figure", "ours", "raw / baseline", "ratio", "target", "result"):
        assert header in text.splitlines()[3]
    assert "targets met: 5/5 -> PASS" in text
    assert "quick: 30 warm round trips" in text
    assert "python 3.11.7, cpus 2" in text
    assert "- a note" in text


def test_rows_show_values_ratios_targets_and_verdicts() -> None:
    text = format_report(make_report())
    row = _result(text, "print(1) round trip, arun, median")
    assert "2.20 ms" in row and "2.00 ms" in row and "1.10x" in row
    assert "<= 1.15x" in row and row.endswith("PASS")
    sync = _result(text, "print(1) round trip, sync run, median")
    assert "1.09x" in sync and "<= 1.10x" in sync and sync.endswith("PASS")
    throughput = _result(text, "200,000 printed lines")
    assert "300,000 lines/s" in throughput and "400,000 lines/s" in throughput
    assert "0.75x" in throughput and ">= 0.50x" in throughput
    memory = _result(text, "RSS growth, 20M lines, median of 3")
    assert "2.5 MiB" in memory and "2.0 MiB (2M lines)" in memory and "1.25x" in memory
    assert "<= 2M lines + 16 MiB" in memory and memory.endswith("PASS")
    assert "     2,000,000 lines: 2.0, 1.5, 3.0 (median 2.0)" in text
    assert "    20,000,000 lines: 2.5, 2.0, 9.0 (median 2.5)" in text
    assert "20M lines - 2M lines: +0.5 MiB (bound +16 MiB) -> PASS" in text
    assert _result(text, "cold start").split()[-1] == "info"
    line = _result(text, "3M-iteration loop")
    assert "(line off)" in line and "+0.6%" in line and "<= +5%" in line


def test_failures_are_reported() -> None:
    report = make_report(
        round_trip_async=_ms(2.4, 3.0, 30),  # 1.20x
        round_trip_sync=_ms(2.6, 3.1, 30),  # 1.30x
        throughput_ours=150_000.0,  # 0.375x
        flat_memory=_flat([2.0, 2.1, 1.9], [30.0, 31.0, 29.0]),  # grows with output
        loop_tracked=_ms(200.0, samples=4),  # +11%
        plot_ours=_ms(80.0, samples=3),  # informational only
    )
    assert not report.passed
    text = format_report(report)
    assert "targets met: 0/5 -> FAIL" in text
    assert _result(text, "print(1) round trip, arun, median").endswith("FAIL")
    assert _result(text, "print(1) round trip, sync run, median").endswith("FAIL")
    assert _result(text, "200,000 printed lines").endswith("FAIL")
    assert _result(text, "RSS growth, 20M lines").endswith("FAIL")
    assert "20M lines - 2M lines: +28.0 MiB (bound +16 MiB) -> FAIL" in text
    assert _result(text, "3M-iteration loop").endswith("FAIL")
    assert _result(text, "plot round trip").endswith("FAIL (info)")


def test_informational_failure_does_not_fail_the_run() -> None:
    report = make_report(plot_ours=_ms(80.0, samples=3), cold_start_ours=_ms(5000.0))
    assert report.passed
    assert "targets met: 5/5 -> PASS" in format_report(report)


def test_to_dict_is_strict_json_with_every_figure() -> None:
    report = make_report()
    data = report.to_dict()
    decoded = json.loads(json.dumps(data, allow_nan=False))
    assert decoded["passed"] is True
    assert decoded["round_trip_async"] == {"median_ms": 2.2, "p90_ms": 2.8, "samples": 30}
    assert decoded["throughput_ours"] == 300_000.0
    assert decoded["active_line_overhead_pct"] == pytest.approx(100 / 180)
    keys = [f["key"] for f in decoded["figures"]]
    assert keys == [
        "round_trip_async_median",
        "round_trip_async_p90",
        "round_trip_sync_median",
        "round_trip_sync_p90",
        "cold_start",
        "throughput",
        "flat_memory",
        "plot",
        "active_line_overhead",
    ]
    by_key = {f["key"]: f for f in decoded["figures"]}
    assert by_key["round_trip_async_median"]["ratio"] == pytest.approx(1.1)
    assert by_key["round_trip_async_median"]["passed"] is True
    assert by_key["cold_start"]["passed"] is None
    assert by_key["plot"]["informational"] is True
    assert decoded["notes"] == ["a note"]
    assert decoded["flat_memory"] == {
        "method": "vmhwm",
        "small": {"lines": 2_000_000, "growth_kib": [2048.0, 1536.0, 3072.0], "median_kib": 2048.0},
        "large": {
            "lines": 20_000_000,
            "growth_kib": [2560.0, 2048.0, 9216.0],
            "median_kib": 2560.0,
        },
        "max_extra_mib": 16.0,
    }
    assert by_key["flat_memory"]["unit"] == "MiB"
    assert by_key["flat_memory"]["ratio"] == pytest.approx(1.25)


@pytest.mark.parametrize(
    ("small", "large", "passed"),
    [
        ([0.0, 0.1, 0.0], [16.0, 15.0, 14.0], True),  # a huge ratio of tiny growths passes
        ([1.0, 1.0, 1.0], [17.0, 17.5, 16.5], True),  # exactly the bound
        ([1.0, 1.0, 1.0], [17.5, 18.0, 40.0], False),
        ([1.0, 1.0, 1.0], [1.0, 90.0, 1.0], True),  # one outlier run: the median holds
        ([50.0, 50.0, 50.0], [40.0, 40.0, 40.0], True),
    ],
)
def test_flat_memory_is_an_absolute_bound_on_the_medians(
    small: list[float], large: list[float], passed: bool
) -> None:
    flat = _flat(small, large)
    assert flat.passed is passed
    assert make_report(flat_memory=flat).passed is passed
    assert flat.figure().passed is passed


def test_flat_memory_zero_baseline_and_its_own_text() -> None:
    flat = _flat([0.0, 0.0, 0.0], [0.5, 0.0, 0.25])
    figure = flat.figure()
    assert figure.ratio == float("inf") and figure.passed
    data = make_report(flat_memory=flat).to_dict()
    assert next(f for f in data["figures"] if f["key"] == "flat_memory")["ratio"] is None
    text = format_memory(flat, ["a memory note"])
    assert "n/a" in _result(text, "RSS growth, 20M lines")
    assert "20M lines - 2M lines: +0.2 MiB (bound +16 MiB) -> PASS" in text
    assert text.endswith("- a memory note\n")


def test_zero_baseline_gives_null_ratio_and_na() -> None:
    report = make_report(throughput_raw=0.0, loop_untracked=_ms(0.0))
    data = report.to_dict()
    json.dumps(data, allow_nan=False)
    by_key = {f["key"]: f for f in data["figures"]}
    assert by_key["throughput"]["ratio"] is None
    assert data["active_line_overhead_pct"] is None
    assert "n/a" in _result(format_report(report), "200,000 printed lines")


def test_timing_from_seconds() -> None:
    timing = Timing.from_seconds([0.004, 0.001, 0.002, 0.003, 0.005])
    assert timing.median_ms == pytest.approx(3.0)
    assert timing.p90_ms == pytest.approx(4.6)
    assert timing.samples == 5
    assert Timing.from_seconds([0.25]) == Timing(250.0, 250.0, 1)
    with pytest.raises(ValueError):
        Timing.from_seconds([])


def test_language_round_trips_become_informational_rows() -> None:
    from benchmarks.bench.model import LanguageTrip

    trip = LanguageTrip(
        "shell", "echo 1", "bash on a PTY", _ms(0.3, samples=30), _ms(0.6, samples=30)
    )
    report = make_report(languages=[trip])
    row = next(f for f in report.figures() if f.key == "round_trip_shell_median")
    assert row.ratio == pytest.approx(2.0)
    assert row.passed is None and row.baseline_label == "bash on a PTY"
    assert "echo 1 round trip (shell)" in format_report(report)
    assert json.loads(json.dumps(report.to_dict()))["languages"][0]["language"] == "shell"


def test_rss_growth_sees_a_peak_that_is_gone_by_the_end() -> None:
    from benchmarks.bench.rss import RssGrowth, choose_method, fresh_block

    method, why = choose_method()
    if method != "vmhwm":
        pytest.skip(f"the RSS peak cannot be reset here: {why}")
    with RssGrowth(method) as growth:
        fresh_block(64 << 20).close()
    assert growth.kib >= 60 * 1024
    with RssGrowth(method) as quiet:
        pass
    assert 0 <= quiet.kib < 16 * 1024


def test_sampled_rss_growth_counts_what_is_still_held_at_the_end() -> None:
    from benchmarks.bench.rss import RssGrowth, fresh_block

    with RssGrowth("sampled") as growth:
        block = fresh_block(64 << 20)
    assert growth.kib >= 60 * 1024
    block.close()


def test_regression_fresh_block_grows_rss_where_a_bytes_object_reuses_resident_heap() -> None:
    """Guards the CI failure where ``b"\\x01" * 64 MiB`` added 156 KiB to RSS: malloc
    served it from a free, already resident heap chunk. Forced here in a child
    process through glibc's ``mallopt``."""
    import ctypes.util
    import subprocess
    import sys

    if not ctypes.util.find_library("c") or not Path("/proc/self/status").exists():
        pytest.skip("needs glibc and Linux's /proc")
    script = """
import ctypes, ctypes.util
libc = ctypes.CDLL(ctypes.util.find_library("c"))
# M_MMAP_MAX 0: every malloc from the heap; M_TRIM_THRESHOLD 1 GiB: a freed
# heap stays resident, as a fragmented one does after a long test run
if libc.mallopt(-4, 0) != 1 or libc.mallopt(-1, 1 << 30) != 1:
    raise SystemExit(3)
from benchmarks.bench.rss import RssGrowth, fresh_block
warm = b"\\x01" * (80 << 20)
del warm
with RssGrowth("sampled") as reused:
    block = b"\\x01" * (64 << 20)
with RssGrowth("sampled") as fresh:
    held = fresh_block(64 << 20)
print(int(reused.kib), int(fresh.kib))
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60
    )
    if done.returncode == 3:
        pytest.skip("this C library does not take mallopt(M_MMAP_MAX)")
    assert done.returncode == 0, done.stderr
    reused_kib, fresh_kib = map(int, done.stdout.split())
    assert reused_kib < 16 * 1024  # the old probe's blind spot, reproduced
    assert fresh_kib >= 60 * 1024
