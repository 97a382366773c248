"""A process whose end another process reports on a socket: one JSON message
``{"status": <wait status>}``. A kernel forked into a sandbox (the fork server's
broker reports it, see :mod:`.sandbox.forked`) and a kernel started from a
checkpoint (the frozen copy that forked it, see :mod:`.backends.jupyter.frozen`) are
waited for this way, as the provisioner waits for a ``Popen``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from collections.abc import Callable

import anyio

__all__ = ["ReportReader", "read_exit"]


def read_exit(report: socket.socket, pidfd: int) -> int:
    """Read the report on ``report`` (readable): the exit code, as ``Popen.returncode``
    gives it. A reporter gone without a word (the socket ended, or said something
    else) takes the process with it: it is killed through ``pidfd`` (if still
    open, >= 0) and ``-SIGKILL`` is its exit code."""
    try:
        data = report.recv(4096)
        status = int(json.loads(data)["status"]) if data else None
    except (OSError, ValueError, KeyError, TypeError):
        status = None
    if status is not None:
        return os.waitstatus_to_exitcode(status)
    if pidfd >= 0:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    return -signal.SIGKILL


class ReportReader:
    """Lets any number of tasks wait for one report: one task reads the socket,
    the others wait for it to stop; if it is cancelled, another reads."""

    def __init__(self) -> None:
        #: Set when the task reading stops.
        self._reading: anyio.Event | None = None

    @property
    def busy(self) -> bool:
        """Whether a task reads the socket now (it is that task's to read and close)."""
        return self._reading is not None

    async def wait(
        self, report: socket.socket, ended: Callable[[], bool], read: Callable[[], None]
    ) -> None:
        """Until ``ended()``: wait for ``report`` to be readable, then ``read()`` it
        (in one task at a time)."""
        while not ended():
            if self._reading is not None:
                await self._reading.wait()
                continue
            self._reading = reading = anyio.Event()
            try:
                await anyio.wait_readable(report)
                read()
            finally:
                self._reading = None
                reading.set()
