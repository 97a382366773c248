"""A server's sessions do not hold mounts or cgroups after it died.

A session's disk image is loop-mounted in its folder, and its processes run in
cgroups of their own; the server removes them when it closes the session. A
server killed outright (SIGKILL, the out-of-memory killer, a crash) closes
nothing: the sandboxes' processes end with it (their supervisors watch it), but
the mounts, their loop devices and the cgroups stayed until the next start on
the same data directory cleaned them, and for good when none came.

:class:`SessionReaper` starts a process of its own (``_reaper.py``, in a session
of its own, so that what kills the server's process group or session spares
it) whose stdin is a pipe only the server writes. When the pipe ends, however
the server ended, the reaper looks at the data directory's ``sessions``
folder: if session folders are left, and no server holds the directory (one
that does cleaned them at its start, or will), it releases their cgroups and
mounts (:func:`~lmc_runtime.sandbox.stale.release_stale_sessions`) and leaves
their files for the next start, which closes their lost runs.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import anyio

from ..pipe_watcher import start_watcher
from ..procs import wait_for_exit
from ..sandbox.stale import release_stale_sessions
from .datadir import reaping, served

__all__ = ["SCRIPT", "SessionReaper", "reap"]

logger = logging.getLogger(__name__)

#: The reaper's script (stdlib only until it has something to do).
SCRIPT = Path(__file__).with_name("_reaper.py")
#: Where the reaper imports this package from: the server's own copy.
_PACKAGE_PARENT = Path(__file__).resolve().parents[2]
#: How long a server that stops waits for its reaper to look and end.
_END_WAIT = 30.0


class SessionReaper:
    """The reaper of one server's data directory (start it once the directory is
    held and its stale sessions cleaned, close it once the server's are closed)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._process: subprocess.Popen[bytes] | None = None
        self._write = -1

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Start the reaper; logged if it cannot be (sessions may then outlive a
        killed server until the next start)."""
        paths = dict.fromkeys([str(_PACKAGE_PARENT), *(os.path.abspath(p) for p in sys.path if p)])
        started = start_watcher(
            SCRIPT,
            *(str(self.data_dir), *paths),
            failure="the reaper of this server's sessions could not be started: a killed "
            "server's mounts and cgroups will stay until the next start",
        )
        if started is not None:
            self._process, self._write = started

    async def aclose(self) -> int | None:
        """End the pipe, and wait (bounded) for the reaper to end: it releases
        what sessions are left once no server holds the data directory. Its exit
        status; None if it was not started, or is still at work."""
        write, self._write = self._write, -1
        if write >= 0:
            os.close(write)
        process, self._process = self._process, None
        if process is None:
            return None
        with anyio.move_on_after(_END_WAIT):
            await wait_for_exit(process.pid, process.wait)
        status = process.poll()
        if status is None:
            logger.warning("the sessions' reaper (pid %d) is still at work", process.pid)
        return status


def reap(data_dir: Path) -> list[str]:
    """Release the cgroups and mounts of the session folders left in ``data_dir``
    if no server holds it; the sessions released."""
    sessions = data_dir / "sessions"
    try:
        if not os.listdir(sessions):
            return []
    except FileNotFoundError:
        return []
    with reaping(data_dir):
        if served(data_dir):
            return []  # its start cleaned them, and its sessions are not ours
        return anyio.run(release_stale_sessions, sessions)
