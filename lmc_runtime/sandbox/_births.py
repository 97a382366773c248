"""How the fork server's children are born (:mod:`._kernels`): a kernel in its
holder's PID namespace (``setns`` for the children, the fork, and ``setns``
back), with no descriptor of the fork server's but its own; the starter dying
with the fork server.

Stdlib only: imported by the fork server by its file name.
"""

import contextlib
import ctypes
import os
import signal

__all__ = ["Births", "die_with", "keep_only"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
#: The PID namespace (``setns``).
_CLONE_NEWPID = 0x20000000


class Births:
    """Forks into a holder's PID namespace: ``setns`` for this process's
    children, the fork, and ``setns`` back to its own."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        # Adopt what the processes it forks leave on the host (a holder's bwrap's
        # child, when the runtime kills the holder), to reap them here. A kernel's
        # own children are in its sandbox's PID namespace: its init adopts them.
        if self._libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_CHILD_SUBREAPER")
        self._own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def fork_into(self, holder: int) -> int:
        """``os.fork()``, the child born in ``holder``'s PID namespace."""
        if self._libc.setns(holder, _CLONE_NEWPID) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"setns: {os.strerror(error)}")
        try:
            pid = os.fork()
        except BaseException:
            self._back()
            raise
        if pid:
            self._back()
        return pid

    def _back(self) -> None:
        if self._libc.setns(self._own, _CLONE_NEWPID) != 0:
            # Every later child would be born in that sandbox: end instead (the
            # runtime starts another fork server).
            os.write(2, b"lmc fork server: could not return to its PID namespace\n")
            os._exit(70)


def keep_only(*kept: int) -> None:
    """Close every descriptor of this process but stdio and ``kept``."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in kept:
            with contextlib.suppress(OSError):
                os.close(fd)


def die_with(parent: int) -> bool:
    """Be killed when ``parent``'s thread that forked this process ends; False if
    ``parent`` is no longer this process's parent (it has ended)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_PDEATHSIG")
    return os.getppid() == parent
