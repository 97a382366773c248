"""The Java row of lmc bench: jshell driven directly on a PTY, and the case that runs it."""

from __future__ import annotations

import shutil

import pytest

from benchmarks.bench.languages import LANGUAGE_CASES
from benchmarks.bench.raw_java import PRINT_ONE, RawJshell

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("jshell") is None, reason="jshell is not installed"),
]


def test_raw_jshell_runs_statements_and_times_each_round_trip() -> None:
    raw = RawJshell(timeout=60)
    try:
        said = raw.run('System.out.println("a" + 1);', timeout=30)
        assert said.replace(" \b", "").split() == ["a1"]
        times = raw.round_trips(5, 30)
    finally:
        raw.close()
    assert len(times) == 5 and all(t > 0 for t in times)


def test_the_java_case_times_the_same_statement_as_the_raw_driver() -> None:
    case = next(case for case in LANGUAGE_CASES if case.language == "java")
    assert case.code == PRINT_ONE
