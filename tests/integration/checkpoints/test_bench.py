"""``lmc bench --only checkpoints --quick``: in one run, the library's rows and the
service's (a real ``lmc serve``), each size's checkpoint, rollback and fork beside
the re-run of the code that built the state, and the memory rows. Behaviour, not
timings: every row is there with a number, and the ratio is against the re-run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.bench.checkpoints import QUICK_SIZES, missing_for_checkpoints
from benchmarks.bench.service import missing_for_service

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"

#: A figure's value: a number and its unit.
NUMBER = r"[0-9][0-9,]*(?:\.[0-9]+)? (?:ms|MiB)"


def _row(table: str, name: str) -> list[str]:
    """The cells of the table's row named ``name`` (split on two spaces or more)."""
    for line in table.splitlines():
        if line.startswith(name + "  "):
            return re.split(r"\s{2,}", line.strip())
    raise AssertionError(f"no row {name!r} in:\n{table}")


def test_lmc_bench_only_checkpoints_has_the_service_rows() -> None:
    missing = missing_for_checkpoints() or missing_for_service()
    if missing is not None:
        pytest.skip(missing)
    done = subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "bench", "--only", "checkpoints", "--quick"],
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd=BENCHMARKS.parent,
        env={**os.environ, "LMC_BENCHMARKS": str(BENCHMARKS)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = done.stdout
    assert "not measured" not in table, table
    for mb in QUICK_SIZES:
        for step in ("checkpoint", "rollback", "fork"):
            for what, rerun in (
                ("of a Python interpreter", "new Computer + re-run"),
                ("over lmc serve, a session", "new session + re-run"),
            ):
                name, ours, baseline, ratio, *_ = _row(
                    table, f"{step} {what} holding {mb} MB, median"
                )
                assert re.fullmatch(NUMBER, ours), (name, ours)
                assert re.fullmatch(rf"{NUMBER} \({re.escape(rerun)}\)", baseline), baseline
                assert re.fullmatch(r"[0-9]+\.[0-9]{2}x", ratio), ratio
        for name, label in (
            (f"memory an unmodified checkpoint adds to lmc serve (PSS), {mb} MB", "its private"),
            (f"memory a fork adds to lmc serve (PSS, a whole session), {mb} MB", "the parent"),
        ):
            _, ours, baseline, *_ = _row(table, name + " of state")
            assert re.fullmatch(f"-?{NUMBER}", ours) and label in baseline, (ours, baseline)
    assert "checkpoints over lmc serve: one server" in table, table
