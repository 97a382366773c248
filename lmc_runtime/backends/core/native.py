"""What an interpreter process writes to its own stdout and stderr (pipes, beside
whatever protocol it speaks): the output of child processes that inherited them,
its warnings, its last lines (why it did not start or died), and for a kernel
its log. A kernel that does not forward its children's output (IRkernel) and
every runner hand it on as the code's output, or as late output when no run is open.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import os
import struct
import termios
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from anyio.lowlevel import checkpoint

from ...procs import close_watched, nonblocking_pipe, read_available
from .items import Output

__all__ = ["NativeOutput"]

#: How long after the process ended its pipes may stay open (held by a child).
_DRAIN_BOUND = 1.0
_TAIL_BYTES = 4096
_LOG_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
_STREAMS = ("stdout", "stderr")

Forward = Callable[[Output], Awaitable[None]]


class NativeOutput:
    """Pipes for a process's stdout and stderr, their readers, its last lines and,
    with ``log_path``, its log. ``forward``, if given, gets what they carry, decoded
    across reads: a character split between two writes stays whole."""

    def __init__(self, forward: Forward | None, log_path: Path | None = None) -> None:
        self._forward = forward
        self._log = os.open(log_path, _LOG_FLAGS, 0o600) if log_path is not None else -1
        self._read: dict[str, int] = {}
        #: The write ends (blocking, as a program expects): the keywords ``stdout`` and ``stderr``.
        self.launch_args: dict[str, int] = {}
        for stream in _STREAMS:
            self._read[stream], self.launch_args[stream] = nonblocking_pipe()
        self._decoders = {s: codecs.getincrementaldecoder("utf-8")("replace") for s in _STREAMS}
        #: Held from a read to its hand-off, so :meth:`read_now` never overtakes a reader.
        self._locks = {stream: anyio.Lock() for stream in _STREAMS}
        self._done = anyio.Event()
        self._tail = b""

    def launched(self) -> None:
        """The process holds the write ends now: close ours, so its end is an end of file."""
        for fd in self.launch_args.values():
            os.close(fd)
        self.launch_args = {}

    def mark(self) -> None:
        """The process is up: what it wrote so far is no longer among its last lines."""
        self._tail = b""

    def tail(self, lines: int = 5) -> str:
        """The last non-empty lines the process wrote (since :meth:`mark`)."""
        text = self._tail.decode("utf-8", "replace")
        kept = [line for line in text.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])

    async def read(self) -> None:
        """Read both pipes until the process and everything it started closed them."""
        try:
            async with anyio.create_task_group() as tg:
                for stream, fd in self._read.items():
                    tg.start_soon(self._reader, stream, fd)
        finally:
            self._done.set()

    async def read_now(self) -> None:
        """Hand on what the pipes hold at this moment: a child wrote it before the
        process said a run ended, so it goes before that end. Only that: a child
        that keeps writing never holds the end back."""
        for stream, fd in self._read.items():
            async with self._locks[stream]:
                left = _pending(fd)
                while left > 0:
                    got = await self._take(stream, fd)
                    if not got:
                        break
                    left -= got
                    await checkpoint()

    async def drained(self) -> None:
        """After the process ended: return once its pipes are read to the end (bounded)."""
        with anyio.move_on_after(_DRAIN_BOUND):
            await self._done.wait()

    async def _reader(self, stream: str, fd: int) -> None:
        while self._read.get(stream) == fd:  # never a wait on a closed descriptor's number
            await anyio.wait_readable(fd)
            async with self._locks[stream]:
                if await self._take(stream, fd) is None:
                    return

    async def _take(self, stream: str, fd: int) -> int | None:
        """One read of ``fd``, handed on: how many bytes it had (None at its end)."""
        data = read_available(fd)
        if data is None:
            text = self._decoders[stream].decode(b"", final=True)
        elif not data:
            return 0
        else:
            if self._log >= 0:
                with contextlib.suppress(OSError):  # a full disk loses log lines, not output
                    os.write(self._log, data)
            self._tail = (self._tail + data)[-_TAIL_BYTES:]
            text = self._decoders[stream].decode(data)
        if self._forward is not None and text:
            await self._forward(Output(text, stream))
        return None if data is None else len(data)

    def close(self) -> None:
        for fd in self._read.values():
            close_watched(fd)
        for fd in [*self.launch_args.values(), self._log]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._read, self.launch_args, self._log = {}, {}, -1


def _pending(fd: int) -> int:
    """How many bytes pipe ``fd`` holds now (0 if that cannot be told)."""
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
    except OSError:
        return 0
