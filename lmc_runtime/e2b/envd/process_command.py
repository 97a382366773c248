"""One running command of a sandbox: its streams, its subscribers, its end.

The command's output is read as it comes and handed to each subscriber (a
client streaming ``Start`` or ``Connect``) through a small bounded queue: a
subscriber that does not read holds the command's output back (its pipe
fills, and the command waits on its writes), so the server never keeps more
than a few chunks per subscriber, however much a command writes. Output no
one subscribes to (a background command whose client left) is read and
dropped, as E2B's envd does.

Killing a command kills its whole sandbox of processes: the wrapper's process
group (the wrapper, bwrap and what runs inside) and, with bwrap, its PID
namespace, whose init the kernel takes down with everything in it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ...lifeline import Lifeline, await_exit
from ...procs import close_watched, signal_group
from .process_launch import Launch, Spawned, set_size

__all__ = ["Command", "Ended", "Event", "Output"]

logger = logging.getLogger(__name__)

#: The most one data event carries, and how many events a subscriber may lag.
CHUNK = 32 * 1024
QUEUE = 16
#: After the command ended, how long what it left open may keep its streams open.
_DRAIN_GRACE = 2.0
#: How long the end may wait on a subscriber that does not read.
_END_WAIT = 10.0
#: How long a write may wait for a command that does not read its input.
_WRITE_WAIT = 30.0


@dataclass(frozen=True)
class Output:
    """A piece of the command's output: ``stream`` is stdout, stderr or pty."""

    stream: str
    data: bytes


@dataclass(frozen=True)
class Ended:
    """How the command ended, as E2B's envd says it (Go's ``ProcessState``)."""

    exit_code: int
    exited: bool
    status: str
    error: str | None

    @classmethod
    def of(cls, returncode: int | None) -> Ended:
        if returncode is None:
            return cls(-1, False, "unknown", "the command's end could not be told")
        if returncode < 0:
            try:
                name = signal.strsignal(-returncode) or f"signal {-returncode}"
            except ValueError:
                name = f"signal {-returncode}"
            status = f"signal: {name.lower()}"
            return cls(-1, False, status, status)
        status = f"exit status {returncode}"
        return cls(returncode, True, status, status if returncode else None)


Event = Output | Ended


class Command:
    """A started command of one sandbox, known by ``pid`` (and ``tag``, if given)."""

    def __init__(
        self,
        pid: int,
        tag: str | None,
        launch: Launch,
        spawned: Spawned,
        lifeline: Lifeline | None,
    ) -> None:
        self.pid = pid
        self.tag = tag
        self.launch = launch
        self._spawned = spawned
        self._lifeline = lifeline
        self._subscribers: set[MemoryObjectSendStream[Event]] = set()
        self.ended: Ended | None = None
        #: Killed because its sandbox ended (its clients are told so, not its end).
        self.cut = False
        self.done = anyio.Event()
        self._released = False
        if lifeline is not None:
            lifeline.hold(spawned.process.pid)

    # -- subscribers --------------------------------------------------------------

    def subscribe(self) -> MemoryObjectReceiveStream[Event]:
        """The command's events from now on, ending with :class:`Ended` (at once, if
        it has ended). Close the stream to leave."""
        send, receive = anyio.create_memory_object_stream[Event](QUEUE)
        if self.ended is not None:
            send.send_nowait(self.ended)
            send.close()
        else:
            self._subscribers.add(send)
        return receive

    async def _publish(self, event: Output) -> None:
        for send in list(self._subscribers):
            try:
                await send.send(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._subscribers.discard(send)

    # -- running ------------------------------------------------------------------

    async def run(self, on_end: Callable[[Command], None]) -> None:
        """Pump the command's output until it has ended, then tell its subscribers
        (and ``on_end``) how."""
        spawned = self._spawned
        try:
            pumping = anyio.CancelScope()
            with pumping:
                async with anyio.create_task_group() as pumps:
                    for name, fd in (
                        ("stdout", spawned.stdout),
                        ("stderr", spawned.stderr),
                        ("pty", spawned.pty),
                    ):
                        if fd >= 0:
                            pumps.start_soon(self._pump, name, fd)
                    pumps.start_soon(self._await_exit, pumping)
        finally:
            with anyio.CancelScope(shield=True):
                # Cancelled (its sandbox ends) or not, nothing of it outlives this.
                signal_group(spawned.process.pid)
                self._release()
                self._close_streams()
                returncode = await anyio.to_thread.run_sync(self._reap)
                self.ended = Ended.of(returncode)
                on_end(self)
                await self._tell_end(self.ended)
                self.done.set()

    async def _await_exit(self, pumping: anyio.CancelScope) -> None:
        """Once the command has ended, what it left (a daemon holding its stdout)
        is killed, and its streams have a moment to drain."""
        await await_exit(self._spawned.process.pid)
        self._release()
        signal_group(self._spawned.process.pid)
        pumping.deadline = anyio.current_time() + _DRAIN_GRACE

    async def _pump(self, name: str, fd: int) -> None:
        while True:
            try:
                await anyio.wait_readable(fd)
                data = os.read(fd, CHUNK)
            except BlockingIOError:
                continue
            except (OSError, anyio.ClosedResourceError) as exc:
                if isinstance(exc, OSError) and exc.errno not in (errno.EIO, errno.EBADF):
                    logger.info("reading command %d's %s failed: %s", self.pid, name, exc)
                return
            if not data:
                return
            await self._publish(Output(name, data))

    async def _tell_end(self, ended: Ended) -> None:
        subscribers, self._subscribers = self._subscribers, set()
        for send in subscribers:
            with anyio.move_on_after(_END_WAIT), contextlib.suppress(anyio.BrokenResourceError):
                await send.send(ended)
            send.close()

    def _reap(self) -> int | None:
        process = self._spawned.process
        try:
            return process.wait(timeout=_END_WAIT)
        except Exception:  # still running after a kill: logged, and left to the sandbox's end
            logger.warning("command %d could not be reaped", self.pid, exc_info=True)
            return None

    def _release(self) -> None:
        if self._lifeline is not None and not self._released:
            self._released = True
            self._lifeline.release(self._spawned.process.pid)

    def _close_streams(self) -> None:
        spawned = self._spawned
        for fd in spawned.descriptors():
            close_watched(fd)
        spawned.stdin = spawned.stdout = spawned.stderr = spawned.pty = -1

    # -- what clients do ----------------------------------------------------------

    def kill(self, signum: int = signal.SIGKILL, *, cut: bool = False) -> None:
        """Send ``signum`` to the command and every process of its sandbox; ``cut``:
        because the sandbox ends."""
        if self.ended is None:
            self.cut |= cut
            signal_group(self._spawned.process.pid, signum)

    async def write(self, data: bytes, *, pty: bool) -> None:
        """Write ``data`` to the command's stdin (or its terminal); OSError if it has none."""
        fd = self._spawned.pty if pty else self._spawned.stdin
        if fd < 0:
            what = "a terminal" if pty else "an open stdin"
            raise OSError(errno.EBADF, f"the command has no {what}")
        view = memoryview(data)
        try:
            with anyio.fail_after(_WRITE_WAIT):
                while view:
                    try:
                        view = view[os.write(fd, view) :]
                    except BlockingIOError:
                        await anyio.wait_writable(fd)
        except TimeoutError:
            raise OSError(errno.EAGAIN, "the command does not read its input") from None
        except anyio.ClosedResourceError:
            raise OSError(errno.EPIPE, "the command's input was closed") from None

    def close_stdin(self) -> None:
        """The command reads end-of-input (OSError if its stdin is not a pipe)."""
        spawned = self._spawned
        if spawned.pty >= 0:
            raise OSError(errno.EINVAL, "a terminal has no stdin to close: send Ctrl-D")
        if spawned.stdin >= 0:
            close_watched(spawned.stdin)
            spawned.stdin = -1

    def resize(self, columns: int, rows: int) -> None:
        """Resize the command's terminal (OSError if it has none)."""
        if self._spawned.pty < 0:
            raise OSError(errno.ENOTTY, "the command has no terminal")
        set_size(self._spawned.pty, columns, rows)
