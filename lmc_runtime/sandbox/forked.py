"""A kernel the fork server (:mod:`.forks`) forked into its sandbox, as the
provisioner uses a ``Popen``: its pid, ``poll``, ``wait`` and ``send_signal``.

Its broker's socket says how it ended. Ending it ends its holder (:mod:`.holder`),
and with it the sandbox's PID namespace and everything left in it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Callable

import anyio

from ..exit_report import ReportReader, read_exit
from ..procs import wait_readable
from .holder import Holder, end_holder

__all__ = ["ForkedKernel", "ForkedProcess"]


class ForkedProcess:
    """A process the fork server started (:meth:`.ForkServer.start`), as a
    ``Popen``: its pid, ``poll``, ``wait`` and ``send_signal``. The fork server
    reports how it ended on ``report``; a report that never comes (the fork
    server gone) kills it (see :func:`~lmc_runtime.exit_report.read_exit`)."""

    def __init__(self, pid: int, pidfd: int, report: socket.socket) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._report = report

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def poll(self) -> int | None:
        if self.returncode is None and wait_readable(self._report.fileno(), 0):
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not wait_readable(self._report.fileno(), timeout):
                raise subprocess.TimeoutExpired(["started process"], timeout or 0)
            self._ended()
        assert self.returncode is not None
        return self.returncode

    def _ended(self) -> None:
        self.returncode = read_exit(self._report, self._pidfd)
        self._report.close()
        with contextlib.suppress(OSError):
            os.close(self._pidfd)
        self._pidfd = -1


class ForkedKernel:
    """A forked kernel, as the provisioner uses a ``Popen``. Its end ends its
    sandbox, whose PID namespace takes every process the kernel started with it."""

    ends_its_tree = True
    _handed_over = False

    def __init__(
        self,
        pid: int,
        pidfd: int,
        broker: socket.socket,
        holder: Holder,
        init: int,
    ) -> None:
        """``init``: a pidfd of the sandbox's init (it is closed with the kernel)."""
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._broker = broker
        self._holder: Holder | None = holder
        self._init = init
        #: One task reads the broker; the others wait.
        self._reader = ReportReader()

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, signum)

    async def ended(self) -> None:
        """Wait in the event loop until the broker reports how the kernel ended;
        its sandbox is ended and reaped in a worker thread. Any number of tasks
        may wait at once (a supervisor's watch and a kill's wait): one reads the
        broker, the others wait for it; if it is cancelled, another reads."""
        await self._reader.wait(
            self._broker,
            lambda: self.returncode is not None,
            lambda: self._read_status(wait=False, release=False),
        )
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._release)

    def poll(self) -> int | None:
        # While a task waits in ended(), the broker is that task's to read: read and
        # closed here, it would leave the task waiting on a closed descriptor's number.
        if self.returncode is None and not self._reader.busy:
            self._read_status(wait=False)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Block until the kernel has ended; its exit code, as ``Popen.wait`` gives it."""
        while self.returncode is None:
            self._read_status(wait=True, timeout=timeout)
        return self.returncode

    def _read_status(
        self, *, wait: bool, timeout: float | None = None, release: bool = True
    ) -> None:
        if not wait_readable(self._broker.fileno(), timeout if wait else 0):
            if wait and timeout is not None:
                raise subprocess.TimeoutExpired(["forked kernel"], timeout)
            return
        self.returncode = read_exit(self._broker, self._pidfd)
        if release:
            self._release()

    def hand_over(self) -> Callable[[], None] | None:
        """Give up its sandbox to a kernel that replaces it in there (a rollback's):
        its own end then ends the kernel alone. What ends the sandbox (blocking,
        once), for that kernel to call when it ends; None once its sandbox has
        ended or was handed over."""
        holder, self._holder = self._holder, None
        if holder is None:
            return None
        init, self._init = self._init, -1
        self._handed_over = True  # its descriptors are still to close at its end
        self.ends_its_tree = False  # what it started is looked for by its session

        def end() -> None:
            end_holder(holder, init)
            os.close(init)

        return end

    def _release(self) -> None:
        """The kernel has ended: end its sandbox and close the descriptors (once)."""
        holder, self._holder = self._holder, None
        handed, self._handed_over = self._handed_over, False
        if holder is None and not handed:
            return
        if holder is not None:
            end_holder(holder, self._init)
            os.close(self._init)
        self._broker.close()
        with contextlib.suppress(OSError):
            os.close(self._pidfd)
        self._pidfd = -1
