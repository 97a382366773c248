"""A server killed with SIGKILL leaves no mount or cgroup, even if nothing starts
again on its data directory (its reaper releases them); the session folders it
leaves are the next start's to clean, and their transcripts are kept."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import anyio
import psutil

from lmc_runtime.sandbox.stale import clean_stale_sessions, mounts_under, stale_cgroups

from ...waiters import process_ended
from .server import Server, _running, output

TOKEN = "test-token-0123456789"
#: Bounds the end of each of a killed server's processes.
_GUARD = 60.0


def _cgroup_dirs(session_id: str) -> list[Path]:
    return [path for group in stale_cgroups(session_id) for path in group.dirs.values()]


def _killed(server: Server) -> list[int]:
    """SIGKILL ``server``; the pids of its processes then that outlived it
    (a bounded wait on each one's end)."""
    processes = psutil.Process(server.process.pid).children(recursive=True)
    server.process.send_signal(signal.SIGKILL)
    assert server.process.wait(timeout=30) == -signal.SIGKILL
    return [p.pid for p in processes if not process_ended(p.pid, _GUARD)]


def test_a_sigkilled_server_leaves_no_mount_or_cgroup_when_nothing_starts_again() -> None:
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)  # sandbox users pass through to their session folders
        data_dir = Path(tmp) / "data"
        sessions = data_dir / "sessions"
        try:
            # A warm session as well as a client's: the pool's hold mounts too.
            with _running(data_dir, ("--pool-size", "1"), TOKEN) as server:
                session_id = server.create()
                assert output(server.execute(session_id, "print('before')")) == "before\n"
                if os.geteuid() == 0:
                    assert mounts_under(sessions), "a session's disk is mounted as root"
                assert _killed(server) == []
            # Once every process of the server ended: nothing of its sessions is left
            # mounted, and their cgroups are gone; their folders stay, with their files.
            assert mounts_under(sessions) == []
            assert _cgroup_dirs(session_id) == []
            assert (sessions / session_id).is_dir()
        finally:
            anyio.run(clean_stale_sessions, sessions)  # what a failure left


def test_restart_after_sigkill_cleans_the_stale_session_folders() -> None:
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)  # sandbox users pass through to their session folders
        data_dir = Path(tmp) / "data"
        sessions = data_dir / "sessions"
        with _running(data_dir, ("--pool-size", "0"), TOKEN) as first:
            session_id = first.create()
            assert output(first.execute(session_id, "print('before')")) == "before\n"
            assert _killed(first) == []
        assert (sessions / session_id).is_dir()

        with _running(data_dir, ("--pool-size", "0"), TOKEN) as second:
            assert mounts_under(sessions) == []
            assert _cgroup_dirs(session_id) == []
            assert not (sessions / session_id).exists()
            # The transcript of the killed session is kept.
            assert (data_dir / "threads" / session_id / "messages.jsonl").is_file()
            fresh = second.create()
            assert output(second.execute(fresh, "print('after')")) == "after\n"
