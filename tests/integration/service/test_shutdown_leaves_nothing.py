"""A server stopped (SIGTERM) while sessions are still starting leaves nothing
behind: no mount, process or cgroup of theirs, and its data directory can be
removed. The pool starts sessions from the moment the server runs, so a
shutdown soon after the start catches some of them half-way. (A start cancelled
once its disk's image is mounted, deterministically:
``tests/integration/sandbox/test_loop_mount.py``.)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

import pytest

from lmc_runtime.sandbox.stale import mounts_under, stale_cgroups

from .server import Server, running_server, wait_for_pool

#: The longest any one wait here takes, in seconds.
WAIT = 60


def _processes_of(server: Server) -> list[str]:
    """Live processes the server left: in its process session (it was started in
    one of its own), or naming its data directory (a kernel's bwrap, which has a
    session of its own). A zombie is not one: it has ended, and is reaped by init."""
    data_dir = str(server.data_dir)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue  # it ended meanwhile
        state, session = fields[0], int(fields[3])
        if state != "Z" and (session == server.process.pid or data_dir in cmdline):
            found.append(f"{entry} {state} {cmdline[:200]}")
    return found


def _stop(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    # uvicorn re-raises SIGTERM once its graceful shutdown is over.
    assert server.process.wait(timeout=WAIT) in (0, -signal.SIGTERM), server.log()
    assert "lmc serve stopped" in server.log(wait=WAIT)


def _assert_nothing_left(server: Server, session_ids: list[str]) -> None:
    """After the server exited: no mount under its data directory, no process of
    its, no cgroup of ``session_ids``, and its data directory can be removed."""
    mounts = mounts_under(server.data_dir)
    try:
        processes = _processes_of(server)
        cgroups = [str(group.dirs) for name in session_ids for group in stale_cgroups(name)]
        removal: list[str] = []
        shutil.rmtree(server.data_dir, onerror=lambda _f, path, exc: removal.append(f"{path}"))
    finally:  # what the test found is not left on the host either
        for point in mounts:
            subprocess.run(["umount", "-l", str(point)], check=False)
    left = {"mounts": mounts, "processes": processes, "cgroups": cgroups, "unremovable": removal}
    assert left == {key: [] for key in left}, server.log()


@pytest.mark.parametrize("when", ["answering", "first_warm"])
def test_a_shutdown_while_the_pool_fills_leaves_nothing(when: str) -> None:
    """``answering``: as soon as it answers /healthz (its pool is starting);
    ``first_warm``: once one warm session is ready (the others still start)."""
    with running_server("--pool-size", "3") as server:
        if when == "first_warm":
            wait_for_pool(server, 1)
        sessions_dir = server.data_dir / "sessions"
        seen = sorted(entry.name for entry in sessions_dir.iterdir())
        _stop(server)
        _assert_nothing_left(server, seen)
