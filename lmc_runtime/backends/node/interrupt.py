"""An interrupt that spares a read of the code's stdin.

A SIGINT to the process makes a ``read`` its main thread is blocked in fail
with ``EINTR`` before ``breakOnSigint`` ends the code, which may catch the error
and go on. Sent to another of its threads, it lets node end the code while the
read still waits: the code stops the moment the read returns.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
from collections.abc import Collection

from ...procs import proc_stat, session_members

__all__ = ["interrupt_sparing_reads", "spare_thread"]

logger = logging.getLogger(__name__)


def spare_thread(pid: int, signum: int = signal.SIGINT) -> int | None:
    """A thread of ``pid`` other than its main one that does not block ``signum``."""
    bit = 1 << (signum - 1)
    try:
        tasks = sorted(int(entry) for entry in os.listdir(f"/proc/{pid}/task"))
    except (OSError, ValueError):
        return None
    for tid in tasks:
        if tid == pid:
            continue
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as fh:
                blocked = next(ln for ln in fh if ln.startswith("SigBlk:"))
            if not int(blocked.split()[1], 16) & bit:
                return tid
        except (OSError, StopIteration, ValueError, IndexError):
            continue
    return None


def _signal_thread(pid: int, tid: int, signum: int) -> bool:
    """``tgkill``: ``signum`` to thread ``tid`` of ``pid``; False if that failed."""
    try:
        tgkill = ctypes.CDLL(None, use_errno=True).tgkill
    except (OSError, AttributeError):  # a C library without it
        return False
    return bool(tgkill(pid, tid, signum) == 0)


def interrupt_sparing_reads(
    group: int, readers: Collection[int], signum: int = signal.SIGINT
) -> bool:
    """``signum`` to every process of ``group`` (session ``group`` too, as node's is);
    each of ``readers``, blocked in a read on its main thread, gets it on another
    thread when it has one that takes it. True if a read was spared."""
    spared = False
    for pid in session_members(group):
        found = proc_stat(pid)
        if found is None or found[1] != group:
            continue
        tid = spare_thread(pid, signum) if pid in readers else None
        if tid is not None:
            if _signal_thread(pid, tid, signum):
                spared = True
                continue
            logger.debug("signalling thread %d of %d failed", tid, pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
    return spared
