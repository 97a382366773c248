"""One run, for every backend: the deadline, the stop ladder and the final message.

The watchdog enforces the deadline whatever pace the caller reads at: at the
deadline (or on ``interrupt()``) the code gets an interrupt; if it has not
stopped ``interrupt_grace`` seconds later, the backend may try one harder rung
(:meth:`Execution.escalate`); if it still runs, the interpreter is restarted
and the run ends saying its state was lost. :meth:`Execution.messages` turns
the route's items into computer messages: output of one stream is joined while
more is waiting, active lines are paced, and exactly one final message ends it.
A backend subclasses this only for what is its own (``handle``, ``escalate``).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio

from ... import replies
from ...messages import Message
from ...replies import Status
from ..base import ExecutionOptions
from .items import Finished, Gone, Line, Output
from .pacing import LinePacer
from .route import Route
from .supervisor import Supervisor
from .turns import stop_phrase

__all__ = ["Execution"]

logger = logging.getLogger(__name__)

_COALESCE_LIMIT = 64 * 1024
_NOTHING = object()


class Execution:
    """One run in flight on a :class:`Supervisor`'s interpreter."""

    #: How the running line is paced (see :class:`~.pacing.LinePacer`).
    dwell = 0.02
    interval = 0.0

    def __init__(self, supervisor: Supervisor, route: Route, options: ExecutionOptions) -> None:
        self.supervisor = supervisor
        self.route = route
        self.options = options
        self.reply_to = options.reply_to
        timeout = options.timeout
        self.deadline = anyio.current_time() + timeout if timeout is not None else float("inf")
        self.stop_reason: str | None = None
        self.pacer = LinePacer(self.dwell, self.interval)
        self.complete = False
        self._abandoned = False
        self._pending: Any = _NOTHING
        #: Called once the interpreter is done with this run (or was restarted).
        self.on_finished: Callable[[], None] = lambda: None

    @property
    def who(self) -> str:
        return self.supervisor.who

    @property
    def line(self) -> int | None:
        return self.pacer.current

    # -- what a backend may override --------------------------------------------

    async def interrupt_code(self) -> None:
        """The first rung: SIGINT to the interpreter's process tree."""
        current = self.supervisor.current
        if current is not None:
            await current.send_signal(signal.SIGINT)

    async def escalate(self) -> bool:
        """A harder rung before a restart; True if one was tried."""
        return False

    async def background(self) -> None:
        """Work that runs beside the watchdog until the run is over (input feeding)."""

    def handle(self, item: Any) -> AsyncIterator[Any]:
        """A backend's own item as generic items or messages (default: dropped)."""
        return _none()

    # -- control from other tasks ---------------------------------------------

    async def request_stop(self, reason: str) -> None:
        """Start the ladder: interrupt now; the watchdog takes it from there."""
        if self.stop_reason is None and not self.route.finished.is_set():
            self.stop_reason = reason
            self.route.attention.set()
            try:
                await self.interrupt_code()
            except Exception:  # a dead interpreter: its watcher reports that
                logger.info("interrupting %s failed", self.who, exc_info=True)

    async def watch(self) -> None:
        """The deadline and the ladder; frees the session once the interpreter is done."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.background)
                await self._ladder()
                tg.cancel_scope.cancel()
        except Exception:
            logger.exception("the %s execution watchdog failed", self.who)
        finally:
            if self._abandoned and not self.complete:
                self._done()
            self.on_finished()

    async def _ladder(self) -> None:
        finished = self.route.finished
        with anyio.CancelScope(deadline=self.deadline):
            await self.route.attention.wait()
        if finished.is_set():
            return
        await self.request_stop("timeout")
        grace = self.options.interrupt_grace
        with anyio.move_on_after(grace):
            await finished.wait()
        if not finished.is_set() and await self.escalate():
            with anyio.move_on_after(grace):
                await finished.wait()
        if not finished.is_set():
            await self.supervisor.restart(
                f"{self.stop_phrase()}. It did not stop within {grace:g} s of an "
                f"interrupt, so {self.who} was restarted",
                Status.of_stop(self.stop_reason or "timeout"),
            )

    def abandon(self) -> None:
        """The caller left: what still comes for this run is dropped, never waited on."""
        self._abandoned = True
        self.route.receive.close()

    # -- the messages ------------------------------------------------------------

    async def _next(self) -> Any:
        """The next item, or a held active line that came due (a ``Line``), or None at the end."""
        if self._pending is not _NOTHING:
            item, self._pending = self._pending, _NOTHING
            return item
        due = self.pacer.due_at()
        try:
            if due is None:
                return await self.route.receive.receive()
            with anyio.move_on_after(max(0.0, due - anyio.current_time())):
                return await self.route.receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None
        return _NOTHING

    def _coalesce(self, first: Output) -> str:
        """Join output of the same stream that is already waiting, up to a limit."""
        parts = [first.text]
        size = len(first.text)
        while size < _COALESCE_LIMIT:
            try:
                item = self.route.receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            if isinstance(item, Output) and item.stream == first.stream:
                parts.append(item.text)
                size += len(item.text)
                continue
            self._pending = item
            break
        return "".join(parts)

    async def messages(self) -> AsyncIterator[Message]:
        """This run's messages, ending with exactly one ``active_line`` null."""
        while True:
            item = await self._next()
            line = self.pacer.take(anyio.current_time())
            if line is not None and self.options.track_lines:
                yield replies.active_line(line, self.reply_to)
            if item is None:
                item = self.route.gone or Gone(f"{self.who} stopped answering")
            if item is _NOTHING:
                continue
            async for message in self._translate(item):
                if message is None:
                    return
                yield message

    async def _translate(self, item: Any) -> AsyncIterator[Message | None]:
        """Messages for ``item``; a None says the run is over."""
        if isinstance(item, Output):
            text = self._coalesce(item)
            if text:
                extras = {"stream": "stderr"} if item.stream == "stderr" else {}
                yield replies.output(text, self.reply_to, **extras)
        elif isinstance(item, Line):
            self.pacer.see(item.line, anyio.current_time())
        elif isinstance(item, Message):
            yield item
        elif isinstance(item, Finished):
            self._done()
            for message in self.finish(item):
                yield message
            yield None
        elif isinstance(item, Gone):
            self._done()
            for message in await self.gone(item):
                yield message
            yield None
        else:
            async for handled in self.handle(item):
                async for result in self._translate(handled):
                    yield result

    def _done(self) -> None:
        """The interpreter is done with this run: later events are news for the next."""
        self.complete = True
        self.supervisor.release(self.route)

    # -- the end -----------------------------------------------------------------

    def where(self) -> str:
        return f" at line {self.line}" if self.line is not None else ""

    def stop_phrase(self) -> str:
        return stop_phrase(self.stop_reason or "timeout", self.options.timeout, self.line)

    def finish(self, done: Finished) -> list[Message]:
        """The notice of a stopped run, if it was, and the final message."""
        out: list[Message] = []
        extras: dict[str, Any] = {**done.extras, "status": done.status}
        if self.stop_reason is not None:
            status = Status.of_stop(self.stop_reason)
            out.append(
                replies.notice(
                    f"{self.stop_phrase()}; {self.who}'s state was kept.{done.note}",
                    status,
                    self.reply_to,
                    state_lost=False,
                    line=self.line,
                )
            )
            extras.update(status=status, state_lost=False)
        out.append(replies.active_line(None, self.reply_to, **extras))
        return out

    async def gone(self, gone: Gone) -> list[Message]:
        """The notice and final message of a run whose interpreter went away."""
        if gone.intentional:
            text = f"{gone.description}; {self.who}'s state was lost."
        elif gone.by_code:
            text = (
                f"The code {gone.description}{self.where()}: "
                f"{self.who} was restarted and its state was lost."
            )
            await self.supervisor.outcome()
        else:
            outcome = await self.supervisor.outcome()
            text = f"{_capital(self.who)} died{self.where()}: {gone.description}. "
            text += f"State lost; {outcome}."
        if gone.detail:
            text += f"\n{gone.detail}"
        notice = replies.notice(
            text,
            gone.status,
            self.reply_to,
            state_lost=True,
            exit_code=gone.exit_code,
            line=self.line,
        )
        final = replies.active_line(
            None, self.reply_to, status=gone.status, state_lost=True, exit_code=gone.exit_code
        )
        return [notice, final]


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


async def _none() -> AsyncIterator[Any]:
    return
    yield
