"""The checkpoint rows of ``lmc bench``: one per measure and size, the issue's
targets at 100 MB only, never failing the benchmark."""

from __future__ import annotations

from benchmarks.bench.checkpoints import CheckpointFigures

SIZE = {
    "checkpoint_ms": 40.0,
    "rollback_ms": 200.0,
    "fork_ms": 90.0,
    "rebuild_ms": 1500.0,
    "checkpoints": 5,
    "pss_kib_each": 20480.0,
    "private_kib_each": 6144.0,
}


def test_rows_per_size_with_the_targets_at_100_mb() -> None:
    rows = {row.key: row for row in CheckpointFigures({1: SIZE, 100: SIZE}).figures()}
    assert sorted(rows) == sorted(
        f"{name}_{mb}mb"
        for mb in (1, 100)
        for name in ("checkpoint", "rollback", "fork", "checkpoint_private")
    )
    assert all(row.informational for row in rows.values())
    assert rows["checkpoint_1mb"].passed is None and rows["checkpoint_1mb"].target == ""
    assert rows["checkpoint_100mb"].passed is True
    assert rows["rollback_100mb"].passed is False  # 200 ms against 50
    assert rows["fork_100mb"].passed is True
    assert rows["checkpoint_private_100mb"].ours == 6.0
    assert rows["checkpoint_private_100mb"].passed is True
    assert rows["rollback_1mb"].ratio == 200.0 / 1500.0
