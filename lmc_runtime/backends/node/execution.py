"""One execution on node: its messages, its deadline and the stop ladder.

The watchdog enforces the deadline whatever pace the caller reads at: at the
deadline (or on ``interrupt()``) node's process group gets SIGINT, which stops
synchronous code (``vm`` runs each statement with ``breakOnSigint``) and
abandons an ``await``; if the code has not stopped after ``interrupt_grace``
seconds (a busy loop inside a callback blocks node's event loop), node is
restarted and the notice says that its state was lost.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio

from ... import replies
from ...messages import Message
from ..base import ExecutionOptions
from ..turns import stop_ladder, stop_phrase
from .host import NodeHost
from .protocol import Done, Line, Output
from .routing import Gone, Route

__all__ = ["Execution"]

logger = logging.getLogger(__name__)

_COALESCE_LIMIT = 64 * 1024

#: At most one active-line message per this many seconds (50 a second).
_LINE_INTERVAL = 0.02


class Execution:
    """One request in flight on a :class:`NodeHost`."""

    def __init__(self, host: NodeHost, route: Route, options: ExecutionOptions) -> None:
        self.host = host
        self.route = route
        self.options = options
        self.reply_to = options.reply_to
        self.deadline = (
            anyio.current_time() + options.timeout if options.timeout is not None else float("inf")
        )
        self.stop_reason: str | None = None
        self.line: int | None = None
        self._line_shown_at = float("-inf")
        #: A line not shown yet: it is, once it has run long enough.
        self._held: int | None = None
        self.complete = False
        self._pending: Output | Line | Done | None = None
        #: Called once node is done with this request (or was restarted).
        self.on_finished: Callable[[], None] = lambda: None

    # -- control from other tasks ------------------------------------------------

    async def request_stop(self, reason: str) -> None:
        """Start the ladder: SIGINT now; the watchdog restarts node after the grace period."""
        if self.stop_reason is None and not self.route.finished.is_set():
            self.stop_reason = reason
            self.host.interrupt()
            self.route.attention.set()

    async def watch(self) -> None:
        """The deadline and the ladder, whatever pace the caller reads at."""
        try:
            await stop_ladder(
                deadline=self.deadline,
                attention=self.route.attention.wait,
                finished=self.route.finished,
                stop=self.request_stop,
                grace=self.options.interrupt_grace,
                restart=self._restart_after_grace,
            )
        except Exception:
            logger.exception("the node execution watchdog failed")
        finally:
            self.on_finished()

    def abandon(self) -> None:
        """The caller left: what node still sends for this run is dropped."""
        self.route.receive.close()

    async def _restart_after_grace(self) -> None:
        status = "timeout" if self.stop_reason == "timeout" else "interrupted"
        grace = self.options.interrupt_grace
        await self.host.restart(
            f"{self._stop_phrase()}. It did not stop within {grace:g} s of an "
            "interrupt, so node was restarted",
            status=status,
        )

    # -- the loop ------------------------------------------------------------------

    async def _next(self) -> Output | Line | Done | None:
        if self._pending is not None:
            item, self._pending = self._pending, None
            return item
        try:
            return await self.route.receive.receive()
        except anyio.EndOfStream:
            return None

    def _coalesce(self, first: Output) -> str:
        """Join output of the same stream that is already waiting, up to a limit."""
        parts = [first.text]
        size = len(first.text)
        while size < _COALESCE_LIMIT:
            try:
                item = self.route.receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
            if isinstance(item, Output) and item.stream == first.stream:
                parts.append(item.text)
                size += len(item.text)
                continue
            self._pending = item
            break
        return "".join(parts)

    async def _receive(self) -> Output | Line | Done | bool | None:
        """The next item; False when a held active line is due before one came."""
        if self._held is None:
            return await self._next()
        wait = self._line_shown_at + _LINE_INTERVAL - anyio.current_time()
        if wait > 0:
            with anyio.move_on_after(wait):
                return await self._next()
        return False

    def _show_held(self) -> Message:
        line, self._held = self._held, None
        self._line_shown_at = anyio.current_time()
        return replies.active_line(line, self.reply_to)

    async def messages(self) -> AsyncIterator[Message]:
        """Yield this execution's messages, ending with ``active_line`` null.

        An active line is shown at most every ``_LINE_INTERVAL`` seconds, and
        only while it is still the line running: a burst of quick statements
        shows a few of them, a slow one always shows.
        """
        while True:
            item = await self._receive()
            if item is False:
                yield self._show_held()
            elif item is None or item is True:
                self._done()
                for message in self._gone(self.route.gone):
                    yield message
                return
            elif isinstance(item, Output):
                extras = {"stream": "stderr"} if item.stream == "stderr" else {}
                yield replies.output(self._coalesce(item), self.reply_to, **extras)
            elif isinstance(item, Line):
                if item.line != self.line:
                    self.line = item.line
                    if self.options.track_lines:
                        self._held = item.line
            else:
                self._done()
                for message in self._finish(item):
                    yield message
                return

    def _done(self) -> None:
        self.complete = True
        self.host.release(self.route)

    def _where(self) -> str:
        return f" at line {self.line}" if self.line is not None else ""

    def _stop_phrase(self) -> str:
        assert self.stop_reason is not None
        return stop_phrase(self.stop_reason, self.options.timeout, self.line)

    def _finish(self, done: Done) -> list[Message]:
        out: list[Message] = []
        extras: dict[str, Any] = {"status": done.status}
        if self.stop_reason is not None:
            status = "timeout" if self.stop_reason == "timeout" else "interrupted"
            still = " Promises and timers it started may still be running." if done.pending else ""
            out.append(
                replies.notice(
                    f"{self._stop_phrase()}; node's state was kept.{still}",
                    status,
                    self.reply_to,
                    state_lost=False,
                    line=self.line,
                )
            )
            extras = {"status": status, "state_lost": False}
        out.append(replies.active_line(None, self.reply_to, **extras))
        return out

    def _gone(self, gone: Gone | None) -> list[Message]:
        if gone is None:
            gone = Gone("node stopped answering")
        if gone.intentional:
            status = gone.status
            text = f"{gone.description}; node's state was lost."
        elif gone.exited_by_code:
            status = "restarted"
            text = (
                f"The code called process.exit({gone.exit_code}){self._where()}: "
                "node was restarted and its state was lost."
            )
        else:
            status = "kernel_died"
            text = (
                f"node died{self._where()}: {gone.description}. "
                "State lost; node is being restarted."
            )
        return [
            replies.notice(
                text,
                status,
                self.reply_to,
                state_lost=True,
                exit_code=gone.exit_code,
                line=self.line,
            ),
            replies.active_line(None, self.reply_to, status=status, state_lost=True),
        ]
