"""The code's stdin as a FIFO the caller's input callback answers, for every backend.

A program that wants input blocks in ``read``. Once a run's output has gone
quiet, :func:`feed_stdin` looks in ``/proc`` for a process of the session
blocked reading the FIFO, asks the callback for a line (the prompt is the run's
unfinished last output line), echoes it and writes it to the FIFO. A callback
that fails or takes longer than ``input_timeout`` ends in a notice and a stop.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ... import replies
from ...procs import linux_procfs, session_members
from ..inputs import ask_input
from .items import Output
from .turns import first_of

if TYPE_CHECKING:
    from ..base import ExecutionOptions
    from .execution import Execution

__all__ = ["StdinChannel", "answers_fifo_reads", "feed_stdin", "make_fifo"]

#: Kernel wait channels of a process blocked in read, select or poll.
_READING = ("pipe_read", "do_select", "do_sys_poll", "core_sys_select")
#: The wait channel of a thread blocked reading a pipe (``anon_pipe_read`` on newer kernels).
_PIPE_READ = "pipe_read"
#: Quiet time before the first look for a reader, and the longest wait between looks.
QUIET = 0.1
LONGEST = 1.0


def _thread_reads(pid: int) -> bool:
    """Whether a thread of ``pid`` other than its main one is blocked reading a pipe:
    node reads its stdin on a thread of libuv's pool (``kernels/lmc-node/stdin.js``)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tasks:
        if tid == str(pid):
            continue
        try:
            with open(f"/proc/{pid}/task/{tid}/wchan") as fh:
                if _PIPE_READ in fh.read():
                    return True
        except OSError:
            continue
    return False


def answers_fifo_reads(options: ExecutionOptions) -> bool:
    """Whether a run's reads of a stdin FIFO get answered from its input callback: it
    has one, and ``/proc`` shows who is blocked reading. Elsewhere the code's stdin is
    empty, so a read ends at once (end of input) instead of waiting unseen."""
    return options.on_input is not None and linux_procfs()


def make_fifo(path: Path) -> Path:
    """A fresh FIFO at ``path`` any user may open (the sandbox's user too; its folder guards it)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    os.mkfifo(path, 0o600)
    os.chmod(path, 0o666)
    return path


class StdinChannel:
    """The runtime's end of a FIFO some code reads as its stdin: one made for a run
    (:meth:`create`), or the write end of one the interpreter holds (:meth:`writer`)."""

    def __init__(self, path: Path, fd: int, *, owned: bool) -> None:
        self.path = path
        self._fd = fd
        self._owned = owned
        info = os.fstat(fd)
        self._identity = (info.st_dev, info.st_ino)

    @classmethod
    def create(cls, path: Path) -> StdinChannel:
        """Make the FIFO and hold it read-write: opening never blocks, and readers
        never see end-of-input before :meth:`close`, which removes it."""
        make_fifo(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            path.unlink(missing_ok=True)
            raise
        return cls(path, fd, owned=True)

    @classmethod
    def writer(cls, path: Path) -> StdinChannel:
        """The write end of a FIFO whose reader holds it open (``ENXIO`` if none does)."""
        return cls(path, os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC), owned=False)

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def readers(self, session: int) -> list[int]:
        """The processes of ``session`` blocked reading this FIFO as their stdin."""
        found: list[int] = []
        if self._fd < 0 or not linux_procfs():
            return found
        for pid in session_members(session):
            try:
                info = os.stat(f"/proc/{pid}/fd/0")
                if (info.st_dev, info.st_ino) != self._identity:
                    continue
                with open(f"/proc/{pid}/wchan") as fh:
                    wchan = fh.read()
            except OSError:
                continue
            if self.waits(pid, wchan):
                found.append(pid)
        return found

    def waits(self, pid: int, wchan: str) -> bool:
        """Whether ``pid``, whose stdin this is, waiting in kernel function ``wchan``,
        is blocked reading it."""
        return any(name in wchan for name in _READING) or _thread_reads(pid)

    def echoes(self) -> bool:
        """Whether an answer is echoed by the runtime (the code never echoes a FIFO's)."""
        return True

    def check(self, line: str) -> None:
        """Raises :class:`OSError` if ``line`` can never be given as an answer."""

    def reader_waiting(self, session: int) -> bool:
        return bool(self.readers(session))

    def answer(self, line: str) -> None:
        """Give the waiting reader ``line`` and a newline (nothing once closed).

        Raises :class:`OSError` if it does not fit in what the FIFO has free.
        """
        if self._fd < 0:
            return
        data = (line + "\n").encode("utf-8")
        if os.write(self._fd, data) < len(data):
            raise BlockingIOError(errno.EAGAIN, "the FIFO is full")

    def close(self) -> None:
        """Readers get end-of-input; what they left unread is dropped. Idempotent."""
        if self._fd < 0:
            return
        os.close(self._fd)
        self._fd = -1
        if self._owned:
            with contextlib.suppress(OSError):
                self.path.unlink()
        else:
            self._drain()

    def _drain(self) -> None:
        """Drop what the code did not read, so a later run never reads it."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return
        try:
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) == self._identity:  # not a new FIFO there
                while os.read(fd, 65536):
                    pass
        except OSError:  # EAGAIN: empty, with a writer still open somewhere
            pass
        finally:
            os.close(fd)


async def feed_stdin(run: Execution, channel: StdinChannel) -> None:
    """Answer reads of ``channel`` in the run's session (its
    :meth:`~.execution.Execution.reading_session`, asked at each look) from the run's
    input callback, until the run is over or the callback failed; a look that finds no reader waits
    twice as long before the next, up to :data:`LONGEST`."""
    route, delay = run.route, QUIET
    while True:
        route.activity = anyio.Event()
        with anyio.move_on_after(delay):
            await first_of(route.activity, route.finished)
        if route.finished.is_set() or channel.closed:
            return
        if route.activity.is_set():
            delay = QUIET
        elif not await anyio.to_thread.run_sync(channel.reader_waiting, run.reading_session()):
            delay = min(delay * 2, LONGEST)
        elif await _answer(run, channel):
            delay = QUIET
        else:
            return


async def _answer(run: Execution, channel: StdinChannel) -> bool:
    """Ask the callback for a line; False (and the run is stopped) if that failed."""
    route = run.route
    if run.options.on_input is None:
        return False
    prompt = route.tail
    value, failure = await ask_input(run.options, prompt)
    if value is None:
        await _give_up(run, prompt, failure or "")
        return False
    if route.finished.is_set() or run.stop_reason is not None:
        return False
    try:
        channel.check(value)
        # The echo goes first, so it comes before whatever the code prints next.
        if channel.echoes():
            await route.put(Output(value + "\n"))
        channel.answer(value)
    except OSError as exc:
        await _give_up(run, prompt, f"the answer could not be written ({exc})")
        return False
    return True


async def _give_up(run: Execution, prompt: str, failure: str) -> None:
    """Tell why a read got no answer, and stop the run (unless it is over)."""
    if not run.route.finished.is_set():
        text = f"input({prompt!r}) could not be answered: {failure}"
        await run.route.put(replies.notice(text, "error", run.reply_to))
        await run.request_stop("input")
