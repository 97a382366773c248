"""The load report's verdicts, from known samples (no server): flat memory is
judged from the warm-up sample to the last one, and only processes and
descriptors above their start count as leaked."""

from __future__ import annotations

from dataclasses import replace

from benchmarks.load.census import Census
from benchmarks.load.loadreport import MixReport, Sample

START = Census(
    processes=10,
    fds=200,
    server_fds=70,
    server_threads=11,
    files=56,
    mounts=2,
    cgroups=10,
    rss_bytes=200 << 20,
)


def _report(*rss_mib: int, warm_index: int = 1) -> MixReport:
    report = MixReport(2, ["python", "shell"], duration=40, flat_percent=10)
    report.samples = [
        Sample(at=10.0 * i, census=replace(START, rss_bytes=mib << 20))
        for i, mib in enumerate(rss_mib)
    ]
    report.warm = report.samples[warm_index]
    report.start = START
    return report


def test_memory_that_levels_off_after_warm_up_is_flat() -> None:
    report = _report(200, 1000, 1040, 1050, 1060)
    assert report.to_dict()["rss_growth_percent"] == 6.0
    assert report.flat is True
    figures = report.to_dict()["rss_mib"]
    assert figures == {
        "start": 200.0,
        "warm": 1000.0,
        "warm_at_s": 10.0,
        "middle": 1040.0,
        "end": 1060.0,
    }


def test_memory_that_keeps_climbing_after_warm_up_is_not_flat() -> None:
    report = _report(200, 1000, 1100, 1200, 1300)
    assert report.flat is False
    assert report.to_dict()["rss_growth_percent"] == 30.0


def test_no_warm_up_sample_gives_no_verdict_on_memory() -> None:
    report = _report(200, 300)
    report.warm = None
    assert report.flat is None


def test_only_processes_and_descriptors_above_their_start_are_leaked() -> None:
    report = _report(200, 1000)
    report.after = replace(START, processes=12, fds=199, server_threads=40, files=60)
    assert report.leaked() == {"processes": (10, 12)}
    assert report.to_dict()["leaked"] == {"processes": [10, 12]}
    assert report.after.above(START) == {
        "processes": (10, 12),
        "server_threads": (11, 40),
        "files": (56, 60),
    }
