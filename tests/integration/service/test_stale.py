"""A server killed with SIGKILL leaves mounts and cgroups; the next start cleans them."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

from lmc_runtime.sandbox.stale import mounts_under, stale_cgroups

from .server import _running, output


def _cgroup_dirs(session_id: str) -> list[Path]:
    return [path for group in stale_cgroups(session_id) for path in group.dirs.values()]


def test_restart_after_sigkill_cleans_stale_mounts_and_cgroups() -> None:
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)  # sandbox users pass through to their session folders
        data_dir = Path(tmp) / "data"
        sessions = data_dir / "sessions"
        with _running(data_dir, ("--pool-size", "0"), "test-token-0123456789") as first:
            session_id = first.create()
            assert output(first.execute(session_id, "print('before')")) == "before\n"
            mounted = mounts_under(sessions)
            cgroups = _cgroup_dirs(session_id)
            first.process.send_signal(signal.SIGKILL)
            first.process.wait(timeout=30)
        # What a killed server leaves: its session folder, and as root its disk image's
        # mount; its cgroups where cgroups are writable.
        assert (sessions / session_id).is_dir()
        if os.geteuid() == 0:
            assert mounted and mounts_under(sessions) == mounted
        assert _cgroup_dirs(session_id) == cgroups

        with _running(data_dir, ("--pool-size", "0"), "test-token-0123456789") as second:
            assert mounts_under(sessions) == []
            assert _cgroup_dirs(session_id) == []
            assert not (sessions / session_id).exists()
            # The transcript of the killed session is kept.
            assert (data_dir / "threads" / session_id / "messages.jsonl").is_file()
            fresh = second.create()
            assert output(second.execute(fresh, "print('after')")) == "after\n"
