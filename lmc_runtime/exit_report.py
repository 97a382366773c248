"""A process whose end another process reports on a socket: one JSON message
``{"status": <wait status>}``. A kernel forked into a sandbox (the fork server
reports it, see :mod:`.sandbox.forked`) and a kernel started from a
checkpoint (the frozen copy that forked it, see :mod:`.backends.jupyter.frozen`) are
waited for this way, as the provisioner waits for a ``Popen``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Callable

import anyio

from .procs import wait_readable

__all__ = ["ReportReader", "ReportedProcess", "read_exit"]


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


class ReportedProcess:
    """A process whose end another process reports on ``report``, as a ``Popen``
    is used: its pid, ``poll``, ``wait``, ``send_signal``, and :meth:`ended` in
    the event loop. Subclasses add what its end releases (:meth:`_release`)."""

    #: What ``subprocess.TimeoutExpired`` names.
    _what = "process"

    def __init__(self, pid: int, pidfd: int, report: socket.socket) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._report = report
        #: One task reads the report; the others wait.
        self._reader = ReportReader()
        #: What it holds is released once; a later caller waits for that release.
        self._releasing = threading.Lock()
        self._released = False

    def send_signal(self, signum: int) -> None:
        if self.returncode is None and self._pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def ended(self) -> None:
        """Wait in the event loop until its end is reported; what it holds is
        released in a worker thread. Any number of tasks may wait at once (a
        supervisor's watch and a kill's wait): one reads the report, the others
        wait for it; if it is cancelled, another reads."""
        await self._reader.wait(
            self._report,
            lambda: self.returncode is not None,
            lambda: self._read_status(release=False),
        )
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._release_once)

    def poll(self) -> int | None:
        # While a task waits in ended(), the report is that task's to read: read and
        # closed here, it would leave the task waiting on a closed descriptor's number.
        idle = self.returncode is None and not self._reader.busy
        if idle and wait_readable(self._report.fileno(), 0):
            self._read_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Block until it has ended; its exit code, as ``Popen.wait`` gives it."""
        while self.returncode is None:
            if not wait_readable(self._report.fileno(), timeout):
                raise subprocess.TimeoutExpired([self._what], timeout or 0)
            self._read_status()
        return self.returncode

    def _read_status(self, *, release: bool = True) -> None:
        self.returncode = read_exit(self._report, self._pidfd)
        if release:
            self._release_once()

    def _release_once(self) -> None:
        """:meth:`_release`, once, whichever threads ask (each task awaiting
        :meth:`ended` asks, in a worker thread): a later caller returns once that
        release is over. Regression: two threads closed one pidfd's number, the
        second perhaps a descriptor another thread had opened in between."""
        with self._releasing:
            if self._released:
                return
            self._released = True
            self._release()

    def _release(self) -> None:
        """It has ended: close the report and the pidfd (blocking; run once)."""
        self._report.close()
        with contextlib.suppress(OSError):
            if self._pidfd >= 0:
                os.close(self._pidfd)
        self._pidfd = -1
