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


SERVICE = {
    "checkpoint_ms": 30.0,
    "rollback_ms": 120.0,
    "fork_ms": 1200.0,
    "fork_request_ms": 900.0,
    "rebuild_ms": 600.0,
    "start_ms": 450.0,
    "checkpoints": 5,
    "forks": 5,
    "session_pss_kib": 102400.0,
    "checkpoint_pss_kib_each": 4096.0,
    "checkpoint_private_kib_each": 5120.0,
    "fork_pss_kib_each": 153600.0,
    "sandboxed": 1.0,
}


def test_service_rows_beside_the_library_rows_each_against_the_re_run() -> None:
    figures = CheckpointFigures({100: SIZE}, {1: SERVICE, 100: SERVICE}, ["a note"])
    rows = {row.key: row for row in figures.figures()}
    service = [key for key in rows if key.startswith("service_")]
    assert sorted(service) == sorted(
        f"service_{name}_{mb}mb"
        for mb in (1, 100)
        for name in (
            "checkpoint",
            "rollback",
            "fork",
            "fork_request",
            "checkpoint_memory",
            "fork_memory",
            "start",
        )
    )
    assert all(row.informational for row in rows.values())
    fork = rows["service_fork_100mb"]
    assert fork.ratio == 2.0 and fork.baseline_label == "new session + re-run"
    assert fork.target == "<= 100 ms" and fork.passed is False  # the target, missed
    assert rows["service_checkpoint_100mb"].passed is True
    assert rows["service_rollback_100mb"].passed is False
    assert rows["service_checkpoint_memory_100mb"].ours == 4.0
    assert rows["service_checkpoint_memory_100mb"].passed is True
    assert rows["service_checkpoint_memory_1mb"].passed is None
    assert rows["service_fork_memory_100mb"].ratio == 1.5  # a fork holds a whole session
    assert rows["service_start_1mb"].ours == 450.0
    assert rows["service_fork_request_1mb"].ratio == 2.0  # against a new session's start
