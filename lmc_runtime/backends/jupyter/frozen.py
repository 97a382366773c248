"""A Python kernel's checkpoints, on the host: the frozen copy of the kernel
(``kernels/lmc-python/lmc_checkpoint.py``) and the kernels started from it.

:func:`freeze` asks the kernel, in a hidden run, to fork its frozen copy, which
connects to a socket the host listens on for it in the session's folder (one
only the host writes). The connection is the copy's lifeline: when the host
closes it (the checkpoint dropped, its Computer closed, its process ended
however it ended), the copy ends. :class:`Frozen` starts kernels from it, as the
kernel provisioner forks one (:class:`~..base.ForkingLauncher`): each request
carries a socket of its own, on which the copy, which forks the kernel and
reaps it, sends its pid, a pidfd of it and, once it ended, its wait status.
The kernel ends itself, with its process group, if the host's end closes
first, whether or not its checkpoint is still kept. :class:`RevivedKernel`
stands for it where the provisioner keeps a ``Popen``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from ...errors import KernelStartError
from ...exit_report import ReportedProcess
from ...procs import wait_readable

__all__ = ["Frozen", "RevivedKernel"]

#: How long the frozen copy may take to answer a request, in seconds.
_ANSWER = 30.0


class RevivedKernel(ReportedProcess):
    """A kernel started from a checkpoint, as the provisioner uses a ``Popen``.
    It leads a session of its own: the provisioner's kill ends what it started.
    In a sandbox it holds the sandbox (:meth:`adopt`) as the kernel it replaced did.
    The frozen copy says how it ended on ``reports`` (its end ends the kernel)."""

    ends_its_tree = False
    _what = "revived kernel"

    def __init__(self, pid: int, pidfd: int, reports: socket.socket) -> None:
        super().__init__(_host_pid(pidfd) or pid, pidfd, reports)
        #: Ends the sandbox it runs in, when it ends (see :meth:`adopt`).
        self._end_sandbox: Callable[[], None] | None = None

    def adopt(self, end_sandbox: Callable[[], None]) -> None:
        """Hold the sandbox it runs in, handed over by the kernel it replaced:
        ``end_sandbox`` (blocking) is called once this kernel has ended."""
        self._end_sandbox = end_sandbox

    def hand_over(self) -> Callable[[], None] | None:
        """Give up its sandbox to the kernel that replaces it (another rollback)."""
        end, self._end_sandbox = self._end_sandbox, None
        return end

    def _release(self) -> None:
        super()._release()
        end, self._end_sandbox = self._end_sandbox, None
        if end is not None:
            end()


def _host_pid(pidfd: int) -> int | None:
    """The pid, in the host's PID namespace, of the process pidfd ``pidfd`` refers to."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}", encoding="ascii") as info:
            for line in info:
                if line.startswith("Pid:"):
                    pid = int(line.split()[1])
                    return pid if pid > 0 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


class Frozen:
    """The frozen copy of a kernel (process ``pid``), on its connection ``conn``."""

    def __init__(self, pid: int, conn: socket.socket) -> None:
        self.pid = pid
        self._conn = conn
        self._pidfd = os.pidfd_open(pid)
        self._lock = anyio.Lock()

    @property
    def alive(self) -> bool:
        """Whether the frozen process is still there (its pidfd is readable once it ended)."""
        return self._pidfd >= 0 and not wait_readable(self._pidfd, 0)

    async def start(
        self, argv: Sequence[str], *, env: Any = None, cwd: Any = None, stdout: int, stderr: int
    ) -> RevivedKernel:
        """Start kernel command line ``argv`` from this copy: its environment and
        working directory are the copy's (they are part of the interpreter's state)."""
        if not self.alive:
            raise KernelStartError(f"the checkpoint's process {self.pid} is gone")
        payload = json.dumps({"argv": [str(part) for part in argv]}).encode()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            async with self._lock:
                socket.send_fds(self._conn, [payload], [theirs.fileno(), stdout, stderr])
            theirs.close()
            with anyio.fail_after(_ANSWER):
                await anyio.wait_readable(ours)
            data, fds, _, _ = socket.recv_fds(ours, 4096, 1)
            pid = json.loads(data)["pid"] if data else None
            if len(fds) != 1 or not isinstance(pid, int):
                for fd in fds:
                    os.close(fd)
                raise KernelStartError("the checkpoint did not start a kernel")
        except (OSError, ValueError, KeyError, TimeoutError) as exc:
            theirs.close()
            ours.close()
            raise KernelStartError(f"the checkpoint did not start a kernel: {exc}") from exc
        except BaseException:
            theirs.close()
            ours.close()
            raise
        return RevivedKernel(pid, fds[0], ours)

    def close(self) -> None:
        """End the frozen process (the kernels started from it stay); idempotent."""
        self._conn.close()
        if self._pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            os.close(self._pidfd)
            self._pidfd = -1
