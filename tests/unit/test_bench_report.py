"""BenchReport and format_report on hand-made figures: no kernels."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from lmc_runtime.bench import BenchReport, Timing, format_report


def _ms(median: float, p90: float | None = None, samples: int = 10) -> Timing:
    return Timing(median, median if p90 is None else p90, samples)


def make_report(**changes: Any) -> BenchReport:
    report = BenchReport(
        quick=True,
        repeat=30,
        round_trip_raw=_ms(2.0, 2.5, 30),
        round_trip_async=_ms(2.2, 2.8, 30),
        round_trip_sync=_ms(2.6, 3.1, 30),
        cold_start_raw=_ms(700.0, samples=1),
        cold_start_ours=_ms(400.0, samples=1),
        lines=200_000,
        throughput_raw=400_000.0,
        throughput_ours=300_000.0,
        memory_lines_small=20_000,
        memory_peak_small_kib=1000.0,
        memory_peak_large_kib=1200.0,
        memory_lines_huge=2_000_000,
        memory_peak_huge_kib=1300.0,
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
    assert "targets met: 4/4 -> PASS" in text
    assert "quick: 30 warm round trips" in text
    assert "python 3.11.7, cpus 2" in text
    assert "- a note" in text


def test_rows_show_values_ratios_targets_and_verdicts() -> None:
    text = format_report(make_report())
    row = _result(text, "print(1) round trip, arun, median")
    assert "2.20 ms" in row and "2.00 ms" in row and "1.10x" in row
    assert "<= 1.15x" in row and row.endswith("PASS")
    assert _result(text, "print(1) round trip, sync run, median").endswith("info")
    throughput = _result(text, "200,000 printed lines")
    assert "300,000 lines/s" in throughput and "400,000 lines/s" in throughput
    assert "0.75x" in throughput and ">= 0.50x" in throughput
    memory = _result(text, "peak traced memory, 200k lines")
    assert "1,200 KiB" in memory and "1,000 KiB (20k lines)" in memory and "1.20x" in memory
    assert _result(text, "peak traced memory, 200k lines").endswith("info")
    assert _result(text, "peak traced memory, 2M lines").endswith("PASS")
    assert _result(text, "cold start").split()[-1] == "info"
    line = _result(text, "3M-iteration loop")
    assert "(line off)" in line and "+0.6%" in line and "<= +5%" in line


def test_failures_are_reported() -> None:
    report = make_report(
        round_trip_async=_ms(2.4, 3.0, 30),  # 1.20x
        throughput_ours=150_000.0,  # 0.375x
        memory_peak_large_kib=4000.0,  # 4x the 20k run: informational
        memory_peak_huge_kib=8000.0,  # 2x the 200k run: memory grows with output
        loop_tracked=_ms(200.0, samples=4),  # +11%
        plot_ours=_ms(80.0, samples=3),  # informational only
    )
    assert not report.passed
    text = format_report(report)
    assert "targets met: 0/4 -> FAIL" in text
    assert _result(text, "print(1) round trip, arun, median").endswith("FAIL")
    assert _result(text, "200,000 printed lines").endswith("FAIL")
    assert _result(text, "peak traced memory, 200k lines").endswith("info")
    assert _result(text, "peak traced memory, 2M lines").endswith("FAIL")
    assert _result(text, "3M-iteration loop").endswith("FAIL")
    assert _result(text, "plot round trip").endswith("FAIL (info)")


def test_informational_failure_does_not_fail_the_run() -> None:
    report = make_report(plot_ours=_ms(80.0, samples=3), cold_start_ours=_ms(5000.0))
    assert report.passed
    assert "targets met: 4/4 -> PASS" in format_report(report)


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
        "flat_memory_huge",
        "plot",
        "active_line_overhead",
    ]
    by_key = {f["key"]: f for f in decoded["figures"]}
    assert by_key["round_trip_async_median"]["ratio"] == pytest.approx(1.1)
    assert by_key["round_trip_async_median"]["passed"] is True
    assert by_key["cold_start"]["passed"] is None
    assert by_key["plot"]["informational"] is True
    assert decoded["notes"] == ["a note"]


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
    from lmc_runtime.bench.model import LanguageTrip

    trip = LanguageTrip(
        "shell", "echo 1", "bash on a PTY", _ms(0.3, samples=30), _ms(0.6, samples=30)
    )
    report = make_report(languages=[trip])
    row = next(f for f in report.figures() if f.key == "round_trip_shell_median")
    assert row.ratio == pytest.approx(2.0)
    assert row.passed is None and row.baseline_label == "bash on a PTY"
    assert "echo 1 round trip (shell)" in format_report(report)
    assert json.loads(json.dumps(report.to_dict()))["languages"][0]["language"] == "shell"
