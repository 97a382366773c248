"""A uid's lease kills what that uid runs only when its last lease did not end
cleanly: a release kills everything of the uid and says so in the uid's lock
file, so the next lease skips a second kill (two processes started on every
session's start path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lmc_runtime.sandbox import identity
from lmc_runtime.sandbox.identity import Identity, UidRange


@pytest.fixture
def kills(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    killed: list[int] = []

    def kill_user(who: Identity) -> bool:
        killed.append(who.uid)
        return True

    monkeypatch.setattr(identity, "kill_user", kill_user)
    return killed


def test_a_uid_never_leased_is_killed_first(tmp_path: Path, kills: list[int]) -> None:
    lease = UidRange(5000, 2, tmp_path).lease()
    assert kills == [5000]
    lease.release()


def test_regression_a_uid_released_cleanly_is_not_killed_again(
    tmp_path: Path, kills: list[int]
) -> None:
    uids = UidRange(5000, 2, tmp_path)
    uids.lease().release()
    assert kills == [5000, 5000]  # at the first lease and at its release
    again = uids.lease()
    assert kills == [5000, 5000]
    again.release()
    assert kills == [5000, 5000, 5000]


def test_a_uid_whose_holder_died_is_killed_at_the_next_lease(
    tmp_path: Path, kills: list[int]
) -> None:
    uids = UidRange(5000, 1, tmp_path)
    uids.lease().release()
    held = uids.lease()
    # The holder ends without a release (a server killed): its lock goes with it.
    assert held._lock_fd is not None
    os.close(held._lock_fd)
    held._lock_fd = None
    uids.lease()
    assert kills == [5000, 5000, 5000]


def test_a_release_whose_kill_failed_leaves_the_next_lease_to_kill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = iter([True, False, True])
    killed: list[int] = []

    def kill_user(who: Identity) -> bool:
        killed.append(who.uid)
        return next(outcomes)

    monkeypatch.setattr(identity, "kill_user", kill_user)
    uids = UidRange(5000, 1, tmp_path)
    uids.lease().release()  # the release's kill fails
    uids.lease()
    assert killed == [5000, 5000, 5000]
