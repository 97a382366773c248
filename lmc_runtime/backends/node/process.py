"""One node process running ``runner.js``: its FIFOs, its pipes, its exit.

The runtime makes two FIFOs in the session's work directory before node starts:
it holds the events FIFO open for reading (and writing, so it never sees a
false end of file) and the control FIFO open read-write; the runner opens both
by path, so they carry ``O_CLOEXEC`` and no child of the code inherits them.
The code's stdin is ``/dev/null``: nothing it reads can swallow a request.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

from ...errors import KernelStartError
from .. import exits
from ..jupyter.process import wait_for_exit

__all__ = ["NodeProcess", "describe_exit", "read_available"]

_CHUNK = 256 * 1024


def describe_exit(code: int | None) -> str:
    """A sentence for how node ended, from its Popen return code."""
    return exits.describe_exit(code, "node")


def read_available(fd: int) -> bytes | None:
    """What can be read from non-blocking ``fd`` now: b"" if nothing, None at its end."""
    try:
        data = os.read(fd, _CHUNK)
    except BlockingIOError:
        return b""
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EINTR):
            return b""
        return None
    return data if data else None


class NodeProcess:
    """A running ``node runner.js`` and the descriptors the runtime holds for it."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        events_fd: int,
        control_fd: int,
        output_fds: dict[str, int],
    ) -> None:
        self.popen = popen
        self.events_fd = events_fd
        self.control_fd = control_fd
        #: Native stdout and stderr (child processes, node's own warnings).
        self.output_fds = output_fds
        #: Cancels every task reading from this process.
        self.scope = anyio.CancelScope()
        #: The code that ``process.exit()`` announced, if the runner said so.
        self.exit_code_announced: int | None = None
        #: The events reader's wait, which the exit watcher cancels to drain.
        self.wait_scope: anyio.CancelScope | None = None
        #: The last bytes node wrote to its native stderr (for start failures).
        self.stderr_tail = b""

    @classmethod
    def spawn(
        cls,
        command: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        fifo_dir: Path,
    ) -> NodeProcess:
        """Make the FIFOs and start ``command`` (which ends with their two paths)."""
        events_path, control_path = fifo_dir / "events", fifo_dir / "control"
        fifo_dir.mkdir(parents=True, exist_ok=True)
        for path in (events_path, control_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            os.mkfifo(path, 0o600)
            # The interpreter may run as another user (the sandbox's); the folder,
            # which only the host writes and that user's group may enter, guards it.
            os.chmod(path, 0o666)
        fds: list[int] = []
        try:
            events_fd = os.open(events_path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            fds.append(events_fd)
            control_fd = os.open(control_path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            fds.append(control_fd)
            out_r, out_w = os.pipe2(os.O_CLOEXEC)
            err_r, err_w = os.pipe2(os.O_CLOEXEC)
            fds += [out_r, err_r]
            try:
                popen = subprocess.Popen(
                    [*command, str(events_path), str(control_path)],
                    cwd=cwd,
                    env=dict(env),
                    stdin=subprocess.DEVNULL,
                    stdout=out_w,
                    stderr=err_w,
                    start_new_session=True,
                )
            finally:
                os.close(out_w)
                os.close(err_w)
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            raise KernelStartError(f"node could not be started: {exc}") from exc
        for fd in (out_r, err_r):
            os.set_blocking(fd, False)
        return cls(popen, events_fd, control_fd, {"stdout": out_r, "stderr": err_r})

    @property
    def pid(self) -> int:
        return self.popen.pid

    def signal_group(self, signum: int) -> None:
        """Send ``signum`` to node's process group: node and every child it started."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signum)

    async def wait_exit(self) -> int | None:
        """Wait for node to end (a pidfd: no polling on Linux); its return code."""
        await wait_for_exit(self.popen.pid, lambda: self.popen.poll() is None)
        return self.popen.poll()

    async def send(self, data: bytes) -> None:
        """Write a request to the control FIFO, waiting while it is full."""
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.control_fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self.control_fd)
                continue
            view = view[written:]

    async def stop(self, timeout: float) -> None:
        """Kill node and its process group, reap it, and close every descriptor."""
        self.scope.cancel()
        self.signal_group(signal.SIGKILL)
        with anyio.move_on_after(timeout):
            await self.wait_exit()
        self.close()

    def close(self) -> None:
        """Close the runtime's descriptors (idempotent)."""
        for fd in (self.events_fd, self.control_fd, *self.output_fds.values()):
            if fd < 0:
                continue
            anyio.notify_closing(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        self.events_fd = self.control_fd = -1
        self.output_fds = {}
