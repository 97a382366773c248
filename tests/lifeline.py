"""Servers the tests start end with the test process, however it ends.

A test's ``lmc serve``, gateway, PostgreSQL or HAProxy is stopped by the test's
own teardown; but a test process that is SIGKILLed (pytest-timeout, a crashed
xdist worker, CI's kill at its deadline) runs no teardown, and the server would
live on, holding its port, its cgroups and its memory.

:func:`tie` puts a started server on this process's
:class:`~lmc_runtime.lifeline.Lifeline`, the one a Computer uses for its
interpreters: a watcher, in a session of its own, reads a pipe only this
process writes, and when the pipe ends (this process ended, however it ended)
it SIGKILLs every server still held, with its process group and session. The
server must be started with ``start_new_session=True`` (its session is what is
killed). A thread waits (without reaping) for the server's end and releases it
at once, whoever reaps it: the pid is never signalled once the system may have
given it to another process.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from typing import Any

from lmc_runtime.lifeline import Lifeline

__all__ = ["tie", "watcher_pid"]

_lock = threading.Lock()
#: This process's lifeline, and the pid it was made in (a forked child makes its own).
_lifeline: tuple[int, Lifeline] | None = None


def _ours() -> Lifeline:
    global _lifeline
    with _lock:
        if _lifeline is None or _lifeline[0] != os.getpid():
            _lifeline = (os.getpid(), Lifeline())
        return _lifeline[1]


def tie(process: subprocess.Popen[Any]) -> None:
    """End ``process`` (started with ``start_new_session=True``), its process group
    and its session when this process ends without having ended it; call it as
    soon as ``process`` is started."""
    pid = process.pid
    with contextlib.suppress(ProcessLookupError):  # ended already: nothing to hold
        if os.getsid(pid) != pid:
            raise ValueError(f"process {pid} is not a session leader: start_new_session=True")
        lifeline = _ours()
        lifeline.hold(pid)
        threading.Thread(
            target=_release_once_ended, args=(lifeline, pid), name=f"tie-{pid}", daemon=True
        ).start()


def _release_once_ended(lifeline: Lifeline, pid: int) -> None:
    # WNOWAIT: the process is left for its owner to reap (Popen.wait, poll...).
    with contextlib.suppress(ChildProcessError):  # reaped already
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    lifeline.release(pid)


def watcher_pid() -> int | None:
    """The pid of this process's watcher, once a server was tied."""
    return _ours().watcher_pid
