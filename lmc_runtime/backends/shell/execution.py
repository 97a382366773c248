"""One cell running in a shell: its messages, and the watchdog that enforces its deadline.

The shell's readers push what they see into this execution (it is their
:class:`~.process.Sink`): output bytes, line records, the done marker, or the
news that the shell ended. :meth:`ShellExecution.messages` turns them into
computer messages at the caller's pace; :meth:`ShellExecution.watch` runs on
its own and enforces the deadline whatever that pace: SIGINT to the
terminal's foreground process group, after ``interrupt_grace`` SIGKILL to that
group if it is a job (the shell keeps its state), and if the shell itself
still does not come back, a restart.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio

from ... import replies
from ...messages import Message
from ..base import ExecutionOptions
from .execution_input import InputFeeder
from .lines import LinePacer, LineRecord
from .marker import Done
from .process import ExitInfo, ShellProcess
from .procs import kill_group
from .stdin import StdinSource
from .wording import exit_text, stop_phrase

__all__ = ["ShellExecution"]

logger = logging.getLogger(__name__)

_BUFFER = 256
_COALESCE_LIMIT = 64 * 1024


Item = bytes | LineRecord | Message
#: Replaces the shell: (reason, status) -> None, once the new one runs.
Restarter = Callable[[str, str], Awaitable[None]]
#: Waits for an automatic restart; returns how it went, as a phrase.
Recovery = Callable[[], Awaitable[str]]


class ShellExecution:
    """One cell in flight on a :class:`ShellProcess`."""

    def __init__(
        self,
        proc: ShellProcess,
        run: int,
        options: ExecutionOptions,
        stdin: StdinSource,
        *,
        restart: Restarter,
        recover: Recovery,
    ) -> None:
        self.proc = proc
        self.run = run
        self.options = options
        self.reply_to = options.reply_to
        self.stdin = stdin
        self._restart = restart
        self._recover = recover
        now = anyio.current_time()
        self.deadline = now + options.timeout if options.timeout is not None else float("inf")
        self._send, self._receive = anyio.create_memory_object_stream[Item](_BUFFER)
        self.finished = anyio.Event()
        self.exit_code: int | None = None
        self.stop_reason: str | None = None
        self.stopped_group: int | None = None
        self.job_killed = False
        self.complete = False
        #: Set when the cell is done or a stop is requested: wakes the watchdog.
        self._wake = anyio.Event()
        self.pacer = LinePacer()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending: Item | None = None
        self._ending: Done | ExitInfo | None = None
        self.feeder = InputFeeder(self) if stdin.interactive else None
        #: Called once the shell is done with this cell (or was restarted).
        self.on_finished: Callable[[], None] = lambda: None

    # -- the sink: called by the shell's readers ----------------------------

    async def output(self, data: bytes) -> None:
        if self.feeder is not None:
            self.feeder.saw_output(data)
        await self._put(data)

    async def done(self, marker: Done) -> None:
        self.exit_code = marker.status
        self._end(marker)

    def line(self, record: LineRecord) -> None:
        if record.run == self.run and self.options.track_lines:
            self.pacer.see(record.line, anyio.current_time())
            # Only a wake-up for messages(): the pacer holds the state.
            with contextlib.suppress(
                anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError
            ):
                self._send.send_nowait(record)

    async def gone(self, info: ExitInfo) -> None:
        self._end(info)

    def _end(self, end: Done | ExitInfo) -> None:
        """The last item: closing the stream needs no room in it and cannot block."""
        if self._ending is None:
            self._ending = end
            self.finished.set()
            self._wake.set()
            self._send.close()

    async def put_message(self, message: Message) -> None:
        await self._put(message)

    async def _put(self, item: Item) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._send.send(item)  # fails only once the caller stopped listening

    def abandon(self) -> None:
        """The caller left: what the cell still prints is dropped, never waited on."""
        self._receive.close()

    # -- control ------------------------------------------------------------

    async def request_stop(self, reason: str) -> None:
        """SIGINT to the foreground job now; the watchdog takes it from there."""
        if self.stop_reason is None and not self.finished.is_set():
            self.stop_reason = reason
            self.stopped_group = self.proc.signal_foreground(signal.SIGINT)
            self._wake.set()

    async def watch(self) -> None:
        """The deadline and the stop ladder, whatever pace the caller reads at."""
        try:
            if self.feeder is None:
                await self._ladder()
            else:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self.feeder.run)
                    await self._ladder()
                    tg.cancel_scope.cancel()
        except Exception:
            logger.exception("the shell execution watchdog failed")
        finally:
            self.stdin.close()
            self.on_finished()

    async def _ladder(self) -> None:
        with anyio.CancelScope(deadline=self.deadline):
            await self._wake.wait()
        if not self.finished.is_set():
            await self.request_stop("timeout")
            grace = self.options.interrupt_grace
            with anyio.move_on_after(grace):
                await self.finished.wait()
            group = self.proc.foreground_group()
            if not self.finished.is_set() and group != self.proc.pid:
                # A job that ignores SIGINT: kill it; the shell keeps its state.
                self.job_killed = kill_group(group)
                with anyio.move_on_after(grace):
                    await self.finished.wait()
            if not self.finished.is_set():
                status = "timeout" if self.stop_reason == "timeout" else "interrupted"
                await self._restart(
                    f"{self.stop_phrase()}. It did not stop within {grace:g} s of an "
                    "interrupt, so the shell was restarted",
                    status,
                )
        if self.stopped_group not in (None, self.proc.pid):
            # Whatever is left of the interrupted job (children that ignored SIGINT).
            kill_group(self.stopped_group)

    # -- the messages --------------------------------------------------------

    async def _next(self, timeout: float | None) -> Item | Done | ExitInfo | None:
        if self._pending is not None:
            item, self._pending = self._pending, None
            return item
        try:
            if timeout is None:
                return await self._receive.receive()
            with anyio.move_on_after(timeout):
                return await self._receive.receive()
        except anyio.EndOfStream:
            return self._ending
        return None

    def _coalesce(self, data: bytes) -> str:
        parts = [data]
        size = len(data)
        while size < _COALESCE_LIMIT:
            try:
                item = self._receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
            if isinstance(item, bytes):
                parts.append(item)
                size += len(item)
                continue
            if not isinstance(item, LineRecord):
                self._pending = item
                break
        return self._decoder.decode(b"".join(parts))

    def _line_message(self) -> Message | None:
        line = self.pacer.take(anyio.current_time())
        return replies.active_line(line, self.reply_to) if line is not None else None

    async def messages(self) -> AsyncIterator[Message]:
        """This cell's messages, ending with ``active_line`` null."""
        try:
            while True:
                due = self.pacer.due_at()
                wait = None if due is None else max(0.0, due - anyio.current_time())
                item = await self._next(wait)
                line = self._line_message()
                if line is not None:
                    yield line
                if isinstance(item, bytes):
                    text = self._coalesce(item)
                    if text:
                        yield replies.output(text, self.reply_to)
                elif isinstance(item, Message):
                    yield item
                elif isinstance(item, Done):
                    break
                elif isinstance(item, ExitInfo):
                    async for message in self._gone(item):
                        yield message
                    return
            rest = self._decoder.decode(b"", final=True)
            if rest:
                yield replies.output(rest, self.reply_to)
            self.complete = True
            async for message in self._finish():
                yield message
        finally:
            self._receive.close()

    def where(self) -> str:
        line = self.pacer.current
        return f" at line {line}" if line is not None else ""

    def stop_phrase(self) -> str:
        assert self.stop_reason is not None
        return stop_phrase(self.stop_reason, self.options.timeout, self.where())

    async def _finish(self) -> AsyncIterator[Message]:
        extras: dict[str, Any] = {"exit_code": self.exit_code, "execution_count": self.run}
        if self.stop_reason is not None:
            status = "timeout" if self.stop_reason == "timeout" else "interrupted"
            how = (
                "; it ignored the interrupt, so its foreground job was killed (SIGKILL)"
                if self.job_killed
                else ""
            )
            yield replies.notice(
                f"{self.stop_phrase()}{how}; the shell's state was kept.",
                status,
                self.reply_to,
                state_lost=False,
                line=self.pacer.current,
            )
            extras.update(status=status, state_lost=False)
        else:
            extras.update(status="ok" if self.exit_code == 0 else "error", state_lost=False)
        yield replies.active_line(None, self.reply_to, **extras)

    async def _gone(self, info: ExitInfo) -> AsyncIterator[Message]:
        self.complete = True
        rest = self._decoder.decode(b"", final=True)
        if rest:
            yield replies.output(rest, self.reply_to)
        extras: dict[str, Any] = {"state_lost": True, "execution_count": self.run}
        if info.intentional:
            yield replies.notice(
                f"{info.description}; the shell's state was lost.",
                info.status,
                self.reply_to,
                state_lost=True,
                line=self.pacer.current,
            )
            yield replies.active_line(None, self.reply_to, status=info.status, **extras)
            return
        outcome = await self._recover()
        text = exit_text(info, self.where(), outcome)
        yield replies.notice(
            text,
            info.status,
            self.reply_to,
            state_lost=True,
            exit_code=info.exit_code,
            line=self.pacer.current,
        )
        yield replies.active_line(
            None, self.reply_to, status=info.status, exit_code=info.exit_code, **extras
        )
