"""``lmc bench --only egress``: the figures come out, each beside its
comparison from the same run, and none is pathological. Bounds are ratios,
loose enough for a loaded machine: they catch a gateway that copies a byte at a
time or a session that waits on a timeout, not a few percent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.bench.egress import missing_for_egress

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


def test_lmc_bench_only_egress() -> None:
    missing = missing_for_egress()
    if missing is not None:
        pytest.skip(missing)
    done = subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "bench", "--only", "egress", "--quick", "--json"],
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
        cwd=BENCHMARKS.parent,
        env={**os.environ, "LMC_BENCHMARKS": str(BENCHMARKS)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    rows = {row["key"]: row for row in report["figures"]}
    keys = ["egress_https_median", "egress_https_p90", "egress_download"]
    assert sorted(rows) == sorted([*keys, "egress_create_median", "egress_create_p90"]), rows
    for row in rows.values():
        assert row["ours"] > 0 and row["baseline"] > 0, row
        assert row["ratio"] == pytest.approx(row["ours"] / row["baseline"]), row
    assert rows["egress_https_median"]["ratio"] < 25, rows
    assert rows["egress_download"]["ratio"] > 0.05, rows
    # A session under a policy (its namespace, its gateway's rules: about 600 ms)
    # against one without (about 100 ms since a session's disk and its kernel's
    # shell start without work of their own: the ratio rose from about 4 to 6).
    # A session that waited on a timeout would be past 10.
    assert rows["egress_create_median"]["ratio"] < 10, rows
