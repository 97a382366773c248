"""One run, for every backend: the deadline, the stop ladder and the final message.

The watchdog enforces the deadline whatever pace the caller reads at: at the
deadline (or on ``interrupt()``) the code gets an interrupt; if it has not
stopped ``interrupt_grace`` seconds later, the backend may try one harder rung
(:meth:`Execution.escalate`); if it still runs, the interpreter is restarted
and the run ends saying its state was lost. :meth:`Execution.messages` turns
the route's items into computer messages, ending with exactly one final one.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

import anyio

from ... import replies
from ...errors import KernelStartError
from ...messages import Message
from ...replies import Status
from ..base import ExecutionOptions
from .items import Finished, Gone, Line, Output
from .pacing import LinePacer
from .route import Route
from .stdin import StdinChannel, feed_stdin
from .supervisor import Supervisor
from .turns import Once, gone_text, interrupts_own, stop_phrase, without_echo

__all__ = ["Execution"]

logger = logging.getLogger(__name__)

_COALESCE_LIMIT = 64 * 1024
_NOTHING = object()


class Execution:
    """One run in flight on a :class:`Supervisor`'s interpreter.

    A backend subclasses it only for what is its own: ``interrupt_code``,
    ``escalate``, ``insist``, ``handle``, ``over``, and ``stdin`` to feed.
    """

    #: How the running line is paced (see :class:`~.pacing.LinePacer`).
    dwell = 0.02
    interval = 0.0
    #: What the interpreter itself writes once when an interrupt ends the code (a
    #: shell's line end for its prompt): left out of a stopped run's output.
    stop_echo = ""

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
        self._echo_gone = False
        #: The code's stdin, and the session whose reads of it :func:`.feed_stdin` answers
        #: (-1: none; the backend answers reads it is told of).
        self.stdin: StdinChannel | None = None
        self.stdin_session = -1
        #: Called once the interpreter is done with this run (or was restarted).
        self.on_finished: Callable[[], None] = lambda: None
        self._settle = Once(self._settled)

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

    async def insist(self) -> None:
        """Runs beside the ladder once a stop was asked, until the run is over."""

    def over(self) -> None:
        """The interpreter is done with the run: clean up what it left."""

    async def handle(self, item: Any) -> AsyncIterator[Any]:
        """A backend's own item as generic items or messages (default: dropped)."""
        return
        yield  # an async generator, as the backends' own

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

    def reading_session(self) -> int:
        """The session whose reads of :attr:`stdin` are answered, at each look (a run
        sent again to a new interpreter changes it)."""
        return self.stdin_session

    async def watch(self) -> None:
        """The deadline and the ladder (beside the stdin feeder, if any); frees the turn."""
        try:
            if self.stdin is None or self.stdin_session < 0:
                await self._ladder()
            else:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(feed_stdin, self, self.stdin)
                    await self._ladder()
                    tg.cancel_scope.cancel()
        except Exception:
            logger.exception("the %s execution watchdog failed", self.who)
        finally:
            if self._abandoned and not self.complete:
                self._done()
            self._settle()

    def _settled(self) -> None:
        try:
            if self.stdin is not None:
                self.stdin.close()
            self.over()
        finally:
            self.on_finished()

    async def _ladder(self) -> None:
        finished = self.route.finished
        with anyio.CancelScope(deadline=self.deadline):
            await self.route.attention.wait()
        if finished.is_set():
            return
        await self.request_stop("timeout")
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.insist)
            await self._wait_or_restart()
            tg.cancel_scope.cancel()

    async def _wait_or_restart(self) -> None:
        finished, grace = self.route.finished, self.options.interrupt_grace
        with anyio.move_on_after(grace):
            await finished.wait()
        if not finished.is_set() and await self.escalate():
            with anyio.move_on_after(grace):
                await finished.wait()
        if not finished.is_set():
            try:
                await self.supervisor.restart(
                    f"{self.stop_phrase()}. It did not stop within {grace:g} s of an "
                    f"interrupt, so {self.who} was restarted",
                    Status.of_stop(self.stop_reason or "timeout"),
                )
            except KernelStartError as exc:
                # The run has ended already; the next one tries to start it again.
                logger.warning("%s could not be started again: %s", self.who, exc)

    def abandon(self) -> None:
        """The caller left: what still comes for this run is dropped, never waited on."""
        self._abandoned = True
        self.route.leave()

    # -- the messages ------------------------------------------------------------

    async def _next(self) -> Any:
        """The next item, a held active line that came due, or None at the end."""
        if self._pending is not _NOTHING:
            item, self._pending = self._pending, _NOTHING
            return item
        route = self.route
        try:
            return route.take_nowait()  # no loop turn while items wait
        except anyio.WouldBlock:
            pass
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None
        due = self.pacer.due_at()
        try:
            if due is None:
                return await route.take()
            with anyio.move_on_after(max(0.0, due - anyio.current_time())):
                return await route.take()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None
        return _NOTHING

    async def messages(self) -> AsyncGenerator[Message, None]:
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
            # Closed here, not left to the garbage collector (a task and a wakeup each).
            async with aclosing(self._translate(item)) as translated:
                async for message in translated:
                    if message is None:
                        return
                    yield message

    async def _translate(self, item: Any) -> AsyncGenerator[Message | None, None]:
        """Messages for ``item``; a None says the run is over."""
        if isinstance(item, Output):
            text, after = self.route.join(item, _COALESCE_LIMIT)
            if after is not None:
                self._pending = after
            if self.stop_reason is not None and self.stop_echo and not self._echo_gone:
                text, self._echo_gone = without_echo(text, self.stop_echo)
            if text:
                extras: dict[str, Any] = {"stream": "stderr"} if item.stream == "stderr" else {}
                if item.error is not None:
                    extras["error"] = item.error
                if item.value:  # as a Jupyter kernel's execute_result is marked
                    extras["display"] = {"main": True}
                yield replies.output(text, self.reply_to, **extras)
        elif isinstance(item, Line):
            self.pacer.see(item.line, anyio.current_time())
        elif isinstance(item, Message):
            if not interrupts_own(self.stop_reason, item.extras):
                yield item
        elif isinstance(item, Finished | Gone):
            self._done()
            ending = self.finish(item) if isinstance(item, Finished) else await self.gone(item)
            for message in ending:
                yield message
            yield None
        else:
            async for each in self.handle(item):
                async with aclosing(self._translate(each)) as results:
                    async for result in results:
                        yield result

    def _done(self) -> None:
        """The interpreter is done with this run: later events are news for the next.

        A run nobody stopped frees its turn at once; a stopped one once its ladder ends.
        """
        self.complete = True
        self.supervisor.release(self.route)
        if self.stop_reason is None:
            self._settle()

    # -- the end -----------------------------------------------------------------

    def where(self) -> str:
        return f" at line {self.line}" if self.line is not None else ""

    def stop_phrase(self) -> str:
        return stop_phrase(self.stop_reason or "timeout", self.options.timeout, self.line)

    def finish(self, done: Finished) -> list[Message]:
        """The notice of a stopped run, if it was, and the final message."""
        out: list[Message] = []
        extras: dict[str, Any] = {**done.extras, "status": done.status}
        if interrupts_own(self.stop_reason, extras):
            del extras["error"]
        if self.stop_reason is not None:
            status = Status.of_stop(self.stop_reason)
            text = f"{self.stop_phrase()}; {self.who}'s state was kept.{done.note}"
            out.append(
                replies.notice(text, status, self.reply_to, state_lost=False, line=self.line)
            )
            extras.update(status=status, state_lost=False)
        out.append(replies.active_line(None, self.reply_to, **extras))
        return out

    async def gone(self, gone: Gone) -> list[Message]:
        """The notice and final message of a run whose interpreter went away."""
        outcome = None if gone.intentional else await self.supervisor.outcome()
        text = gone_text(gone, self.who, self.where(), outcome)
        extras = {"state_lost": True, "exit_code": gone.exit_code}
        return [
            replies.notice(text, gone.status, self.reply_to, line=self.line, **extras),
            replies.active_line(None, self.reply_to, status=gone.status, **extras),
        ]
