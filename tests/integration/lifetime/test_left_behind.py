"""The check after each test file (``tests/orphans.py``) finds a process left
running, orphaned, under a user no account has, kills it and names it.

Guards the check that named ``tests/integration/sandbox/test_kill_user.py`` as
the file that left two ``sleep 300`` behind in every run (it killed its
shells, not what they started): an orphan of a sandbox's uid or a test's
made-up one is found; one that ends by itself within the grace is not named;
a process of a real account, or one started before the run, is left alone.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import subprocess
from collections.abc import Iterator

import pytest

from ... import orphans
from ...waiters import process_ended

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not orphans.watched(), reason="needs root and Linux's /proc"),
]

#: A host user no account has (not one another test starts processes as).
MADE_UP = 61_240


def _orphan(uid: int, command: str, gid: int | None = None) -> orphans.Orphan:
    """``command`` started in the background as ``uid`` by a shell that then
    exits: an orphan, adopted by init."""
    shell = subprocess.Popen(
        ["sh", "-c", f"{command} >/dev/null 2>&1 & echo $!"],
        user=uid,
        group=uid if gid is None else gid,
        extra_groups=[],
        cwd="/",
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    out, _ = shell.communicate(timeout=20)
    pid = int(out)
    stat = orphans.process_stat(pid)
    assert stat is not None, f"{command} ended at once"
    if stat[1] != 1:
        os.kill(pid, signal.SIGKILL)
        pytest.skip(f"orphans are adopted by pid {stat[1]} here (a subreaper), not init")
    return orphans.Orphan(pid, stat[2], uid, command)


@contextlib.contextmanager
def _ended(orphan: orphans.Orphan) -> Iterator[orphans.Orphan]:
    try:
        yield orphan
    finally:
        with contextlib.suppress(ProcessLookupError):
            if orphans.process_stat(orphan.pid) is not None:
                os.kill(orphan.pid, signal.SIGKILL)
        assert process_ended(orphan.pid, 20)


def test_an_orphan_of_a_user_no_account_has_is_found_killed_and_named() -> None:
    since = orphans.own_start()
    with _ended(_orphan(MADE_UP, "sleep 300")) as left:
        found = {orphan.pid: orphan for orphan in orphans.orphans(since)}
        assert left.pid in found, found
        assert found[left.pid].uid == MADE_UP and found[left.pid].command == "sleep 300"
        # Started before: not the run's.
        assert left.pid not in [orphan.pid for orphan in orphans.orphans(left.start + 1)]
        killed = orphans.left_behind(since, grace=0.5)
        assert left.pid in [orphan.pid for orphan in killed], killed
        assert process_ended(left.pid, 0), "killed, but still running"


def test_an_orphan_that_ends_within_the_grace_is_not_named() -> None:
    with _ended(_orphan(MADE_UP, "sleep 1")) as brief:
        assert orphans.end([brief], grace=60) == []
        assert process_ended(brief.pid, 0)


def test_a_process_of_an_account_is_left_alone() -> None:
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no account 'nobody' here")
    since = orphans.own_start()
    with _ended(_orphan(nobody.pw_uid, "sleep 300", nobody.pw_gid)) as kept:
        assert kept.pid not in [orphan.pid for orphan in orphans.orphans(since)]
        assert orphans.process_stat(kept.pid) is not None
