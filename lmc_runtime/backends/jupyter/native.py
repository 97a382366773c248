"""What a kernel process writes to its own stdout and stderr (pipes): its log, its
last lines (why it did not start or died), and, for a kernel that does not forward
its children's output (IRkernel), the code's output, or late output when no run is open."""

from __future__ import annotations

import codecs
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from ..core import Output
from ..core.procs import nonblocking_pipe, read_available

__all__ = ["NativeOutput"]

#: How long after the kernel ended its pipes may stay open (held by a child).
_DRAIN_BOUND = 1.0
_TAIL_BYTES = 4096
_LOG_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
_STREAMS = ("stdout", "stderr")


class NativeOutput:
    """Pipes for a kernel's stdout and stderr, their readers, and the kernel's log."""

    def __init__(self, log_path: Path, forward: Callable[[Output], Awaitable[None]] | None) -> None:
        self._forward = forward
        self._log = os.open(log_path, _LOG_FLAGS, 0o600)
        self._read: dict[str, int] = {}
        #: The write ends: the launch keywords ``stdout`` and ``stderr``.
        self.launch_args: dict[str, int] = {}
        for stream in _STREAMS:
            self._read[stream], self.launch_args[stream] = nonblocking_pipe()
        self._done = anyio.Event()
        self._tail = b""

    def launched(self) -> None:
        """The kernel holds the write ends now: close ours, so its end is an end of file."""
        for fd in self.launch_args.values():
            os.close(fd)
        self.launch_args = {}

    def mark(self) -> None:
        """The kernel is up: what it wrote so far is no longer among its last lines."""
        self._tail = b""

    def tail(self, lines: int = 5) -> str:
        """The last non-empty lines the kernel wrote (since :meth:`mark`)."""
        text = self._tail.decode("utf-8", "replace")
        kept = [line for line in text.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])

    async def read(self) -> None:
        """Read both pipes until the kernel and everything it started closed them."""
        try:
            async with anyio.create_task_group() as tg:
                for stream, fd in self._read.items():
                    tg.start_soon(self._reader, stream, fd)
        finally:
            self._done.set()

    async def drained(self) -> None:
        """After the kernel ended: return once its pipes are read to the end (bounded)."""
        with anyio.move_on_after(_DRAIN_BOUND):
            await self._done.wait()

    async def _reader(self, stream: str, fd: int) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            await anyio.wait_readable(fd)
            data = read_available(fd)
            if data is None:
                return
            if data:
                with contextlib.suppress(OSError):  # a full disk loses log lines, not output
                    os.write(self._log, data)
                self._tail = (self._tail + data)[-_TAIL_BYTES:]
                text = decoder.decode(data)
                if self._forward is not None and text:
                    await self._forward(Output(text, stream))

    def close(self) -> None:
        for fd in [*self._read.values(), *self.launch_args.values(), self._log]:
            if fd in self._read.values():
                anyio.notify_closing(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        self._read, self.launch_args, self._log = {}, {}, -1
