"""``kill_user`` ends every process of a session's host user, and only those.

It runs at each lease and release of a uid; it goes through ``setpriv`` where
there is one, since a Popen that changes the user cannot vfork and forks the
whole server instead."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time

import pytest

from lmc_runtime.sandbox import identity
from lmc_runtime.sandbox.identity import Identity, kill_user

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start processes as other users"),
]

#: Host ids no one uses here (the sandbox's range starts far above).
VICTIM, BYSTANDER = 61_237, 61_238


def _start_as(uid: int, script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["sh", "-c", script], user=uid, group=uid, extra_groups=[], cwd="/", start_new_session=True
    )


def _pids_of(uid: int) -> set[int]:
    """The processes of ``uid`` still running (a zombie has ended: its parent,
    init for an orphan, reaps it when it gets to it)."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            if int(fields["Uid"].split()[0]) == uid and fields["State"].split()[0] not in "ZX":
                pids.add(int(entry))
        except (OSError, ValueError, KeyError, IndexError):
            continue
    return pids


def _end_users(*uids: int) -> None:
    """SIGKILL every process of ``uids`` and wait (bounded) until none runs."""
    for uid in uids:
        for pid in _pids_of(uid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    _wait(lambda: not any(_pids_of(uid) for uid in uids))


def _wait(condition: object, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("setpriv", [True, False], ids=["setpriv", "popen-user"])
def test_every_process_of_the_user_is_killed_and_no_other(
    setpriv: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not setpriv:
        which = shutil.which
        monkeypatch.setattr(
            identity.shutil, "which", lambda name: None if name == "setpriv" else which(name)
        )
    # A shell, a detached grandchild in a session of its own, and a bystander.
    victim = _start_as(VICTIM, "setsid sleep 300 & sleep 300")
    bystander = _start_as(BYSTANDER, "sleep 300")
    try:
        _wait(lambda: len(_pids_of(VICTIM)) >= 3)
        kill_user(Identity(VICTIM, VICTIM))
        assert victim.wait(timeout=20) == -9
        _wait(lambda: not (_pids_of(VICTIM) - {victim.pid}))
        assert bystander.poll() is None
        assert _pids_of(BYSTANDER)
    finally:
        # Not the shells alone: the sleeps they started would outlive them,
        # orphans of init (the bystander's, and the victim's if kill_user failed).
        _end_users(VICTIM, BYSTANDER)
        for process in (victim, bystander):
            process.wait(timeout=20)


def test_the_servers_own_user_is_refused() -> None:
    with pytest.raises(ValueError, match="own user"):
        kill_user(Identity(os.geteuid(), os.getegid()))
