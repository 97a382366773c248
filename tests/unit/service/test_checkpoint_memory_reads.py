"""Regression: a rollback's or a checkpoint's reply reads the memory of its own
checkpoint's frozen process only. It used to list every kept checkpoint, reading
each one's ``smaps_rollup`` (about 1 ms for 100 MB of state), twice per rollback:
with 5 checkpoints kept, 7.7 of a rollback's 52 ms."""

from __future__ import annotations

from typing import Any

import pytest

from lmc_runtime.backends.checkpoints import CheckpointInfo
from lmc_runtime.backends.jupyter import branching
from lmc_runtime.backends.jupyter.branching import CheckpointingSession, _Checkpoint
from lmc_runtime.errors import CheckpointNotFound
from lmc_runtime.service import branches


class _Frozen:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.alive = True


def _session(count: int) -> CheckpointingSession:
    session = CheckpointingSession.__new__(CheckpointingSession)
    session._checkpoints = {
        f"c{n}": _Checkpoint(
            CheckpointInfo(f"c{n}", "python", 0.0, 0, True, 100 + n), _Frozen(100 + n)
        )  # type: ignore[arg-type]
        for n in range(count)
    }
    return session


def test_one_checkpoints_info_reads_only_its_own_process(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    monkeypatch.setattr(branching, "private_bytes", lambda pid: read.append(pid) or pid * 10)
    session = _session(5)
    info = session.checkpoint_info("c3")
    assert (info.id, info.bytes, info.alive, read) == ("c3", 1030, True, [103])
    assert [c.bytes for c in session.checkpoints()] == [1000, 1010, 1020, 1030, 1040]
    with pytest.raises(CheckpointNotFound):
        session.checkpoint_info("nothing")


class _Computer:
    """What ``branches`` asks of a Computer: one checkpoint's info, never the list."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def checkpoint_info(self, checkpoint_id: str) -> CheckpointInfo:
        self.asked.append(checkpoint_id)
        if checkpoint_id != "kept":
            raise CheckpointNotFound(checkpoint_id)
        return CheckpointInfo("kept", "python", 0.0, 4096, True, 1)

    def checkpoints(self) -> Any:
        raise AssertionError("every checkpoint's memory read for one")


def test_the_service_reads_one_checkpoints_memory() -> None:
    computer = _Computer()
    assert branches._memory(computer, "kept") == (4096, True)  # type: ignore[arg-type]
    assert branches._memory(computer, "dropped") == (0, False)  # type: ignore[arg-type]
    assert computer.asked == ["kept", "dropped"]
