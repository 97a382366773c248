"""A Computer's lifeline: its interpreters end when the process that owns them ends.

Every interpreter runs in a session of its own, so nothing ties it to its owner:
an owner that returns without closing, or is killed (SIGTERM, SIGKILL, SIGHUP),
would leave it running. :class:`Lifeline` starts a watcher (``_lifeline.py``, on
the first interpreter it is given) whose stdin is a pipe only this process
writes. The backends :meth:`~Lifeline.hold` each interpreter once started and
:meth:`~Lifeline.release` it before reaping it. When the pipe ends (the owner
closed it or died, however it died) the watcher kills every interpreter still
held, with its process group and session. A pipe works wherever Python does;
``PR_SET_PDEATHSIG`` is Linux's only, and fires when the thread that forked
ends, not the process.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import subprocess
import threading
from pathlib import Path

from .pipe_watcher import start_watcher
from .procs import signal_group, wait_for_exit

__all__ = ["WATCHER", "Lifeline", "await_exit"]

logger = logging.getLogger(__name__)

#: The watcher script (stdlib only, run with ``python -I -S``).
WATCHER = Path(__file__).with_name("_lifeline.py")


class Lifeline:
    """The pipe to one watcher, and the interpreters it holds (safe from any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watcher: subprocess.Popen[bytes] | None = None
        self._write = -1
        self._held: set[int] = set()
        self._closed = False

    @property
    def watcher_pid(self) -> int | None:
        """The watcher's pid, once it was started."""
        return self._watcher.pid if self._watcher is not None else None

    def hold(self, pid: int) -> None:
        """Kill process ``pid`` (with its group and session) if this process ends
        before :meth:`release`; call it as soon as ``pid`` is started. Once the
        lifeline is cut, ``pid`` is killed at once."""
        with self._lock:
            if self._closed:
                signal_group(pid)
                return
            if pid in self._held:
                return
            if self._watcher is None and not self._start():
                return
            if self._send(b"+%d\n" % pid):
                self._held.add(pid)

    def release(self, pid: int) -> None:
        """``pid`` has ended or is being ended by its owner: forget it. Call it
        before reaping ``pid``, after which the system may give the number to another."""
        with self._lock:
            if pid in self._held:
                self._held.discard(pid)
                self._send(b"-%d\n" % pid)

    def poll(self, process: subprocess.Popen[bytes]) -> int | None:
        """``process.poll()``, with ``process`` released first if it has ended."""
        if process.returncode is None and process.pid in self._held:
            try:
                ended = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                ended = None
            if ended is not None:
                self.release(process.pid)
        return process.poll()

    def cut(self) -> subprocess.Popen[bytes] | None:
        """Close the pipe: the watcher kills what is still held and ends (its process)."""
        with self._lock:
            self._closed = True
            watcher, self._watcher = self._watcher, None
            self._close_pipe()
        return watcher

    async def aclose(self) -> None:
        """:meth:`cut`, and reap the watcher; nothing is held once every interpreter
        was released."""
        watcher = self.cut()
        if watcher is not None:
            await wait_for_exit(watcher.pid, watcher.wait)
            watcher.wait()

    def _start(self) -> bool:
        """Start the watcher; False (logged) if it cannot be started."""
        started = start_watcher(
            WATCHER,
            failure="the watcher that ends interpreters with this process could not be "
            "started: they may outlive it",
            quiet=True,
        )
        if started is None:
            return False
        self._watcher, self._write = started
        return True

    def _send(self, line: bytes) -> bool:
        if self._write < 0:
            return False
        try:
            os.write(self._write, line)
        except OSError:
            logger.warning("the interpreters' watcher is gone: they may outlive this process")
            self._close_pipe()
            return False
        return True

    def _close_pipe(self) -> None:
        write, self._write = self._write, -1
        if write >= 0:
            with contextlib.suppress(OSError):
                os.close(write)


def _wait_unreaped(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


async def await_exit(pid: int) -> None:
    """Return when child ``pid`` has ended, leaving it unreaped (to be released first)."""
    await wait_for_exit(pid, functools.partial(_wait_unreaped, pid))
