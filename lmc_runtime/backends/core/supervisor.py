"""One supervisor for every interpreter: start, death, restart and close (under one
lock). A death is reported to the open run (or kept as news for the next) and a
new interpreter launched; a failed start is retried by the next run."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ...config import Timeouts
from ...errors import KernelStalled, KernelStartError
from ...messages import Message
from ...replies import Status
from .interpreter import Interpreter, InterpreterFactory
from .items import Gone, Output
from .route import LateOutput, Route
from .turns import news_between_runs

__all__ = ["Supervisor"]

logger = logging.getLogger(__name__)

#: Ends someone asked for (a restart, the session's close): no news for the next run.
_ASKED_FOR = frozenset({Status.RESTARTED, Status.CLOSED})


class Supervisor:
    """The lifecycle of one session's interpreter, through restarts; ``who`` names it."""

    def __init__(
        self, factory: InterpreterFactory, who: str, task_group: TaskGroup, timeouts: Timeouts
    ) -> None:
        self._factory = factory
        self.who = who
        self._task_group = task_group
        self.timeouts = timeouts
        self.current: Interpreter | None = None
        self.route: Route | None = None
        self.late = LateOutput()
        self._lifecycle = anyio.Lock()
        self._recovery = anyio.Event()
        self._recovery.set()
        self._closing = False
        #: An interpreter died with no run open: the next run reports it.
        self.unreported: Gone | None = None
        self.start_failure: KernelStartError | None = None
        #: The open run's code and options, for sending it again (see :meth:`_watch`).
        self._sent: tuple[Route, str, Any] | None = None

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Launch the first interpreter; on failure nothing is left running."""
        async with self._lifecycle:
            await self._launch()

    @property
    def factory(self) -> InterpreterFactory:
        """What makes this session's interpreters."""
        return self._factory

    async def _launch(self, factory: InterpreterFactory | None = None) -> None:
        """Launch an interpreter; one that stalled while starting is replaced once."""
        try:
            interpreter = await self._launch_one(factory)
        except KernelStalled as exc:
            logger.warning("%s stalled while starting; starting another: %s", self.who, exc)
            interpreter = await self._launch_one(factory)
        self.current = interpreter
        self._task_group.start_soon(self._watch, interpreter)

    async def _launch_one(self, factory: InterpreterFactory | None = None) -> Interpreter:
        interpreter = (factory or self._factory)()
        try:
            await interpreter.launch(self._task_group, self.deliver)
        except BaseException:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await interpreter.kill()
            raise
        return interpreter

    async def _relaunch(self, factory: InterpreterFactory | None = None) -> None:
        """Launch under the lock (held by the caller), keeping a failure for later."""
        try:
            await self._launch(factory)
            self.start_failure = None
        except KernelStartError as exc:
            logger.error("starting %s again failed: %s", self.who, exc)
            self.start_failure = exc
            raise

    def start_soon(self, func: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``func`` in the background, for as long as the session lives."""
        self._task_group.start_soon(func)

    async def restart(
        self,
        reason: str = "restarted on request",
        status: Status = Status.RESTARTED,
        factory: InterpreterFactory | None = None,
        *,
        overlap: Callable[[Interpreter], object] | None = None,
    ) -> None:
        """Replace the interpreter (by one ``factory`` makes, if given); an open run
        ends with ``reason`` and ``status``. With ``overlap``, the old one is killed
        while the new one starts, once ``overlap(old)`` readied it for that (under
        the lock: the one replaced, whatever restarts came before)."""
        async with self._lifecycle:
            if self._closing:
                raise KernelStartError("the session is closed")
            old, self.current = self.current, None
            if old is None or overlap is None:
                if old is not None:
                    await self._end_replaced(old)
                self._end_route(Gone.on_purpose(reason, status))
                await self._relaunch(factory)
                return
            overlap(old)
            failed: Exception | None = None
            async with anyio.create_task_group() as ending:
                ending.start_soon(self._end_replaced, old)
                # A kill silences the interpreter before its first wait: that
                # happens here, before the route ends and the new one launches.
                await anyio.lowlevel.checkpoint()
                self._end_route(Gone.on_purpose(reason, status))
                try:
                    await self._relaunch(factory)
                except Exception as exc:  # raised as itself, not in a group
                    failed = exc
            if failed is not None:
                raise failed

    async def _end_replaced(self, old: Interpreter) -> None:
        """Kill the interpreter a restart replaces, to the end: a restart cancelled
        (its caller left) or failing to launch the new one leaves nothing of it."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.timeouts.startup):
            try:
                await old.kill()
            except Exception:  # the new one starts all the same
                logger.exception("%s: ending the one a restart replaced failed", self.who)

    @property
    def settled(self) -> bool:
        """No restart under way or pending: a run sent now reaches a live interpreter."""
        return (
            self._recovery.is_set()
            and self.start_failure is None
            and not self._lifecycle.locked()
            and not self._closing
            and self.current is not None
        )

    async def ensure_ready(self) -> None:
        """Wait for a restart in progress; retry one that failed; refuse once closed."""
        if self.settled:
            return
        await self._recovery.wait()
        async with self._lifecycle:  # a restart under way ends first
            pass
        if self._closing:
            raise KernelStartError("the session is closed")
        if self.start_failure is not None or self.current is None:
            await self.restart("restarted after a failed start")

    async def outcome(self) -> str:
        """After a death: wait for the new interpreter, and say how that went."""
        try:
            await self.ensure_ready()
        except KernelStartError as exc:
            return f"restarting it failed ({exc}); the next run will try again"
        return "it has been restarted"

    async def shutdown(self) -> None:
        """Stop the interpreter and every process it started; an open run ends ``closed``."""
        self._closing = True
        with anyio.CancelScope(shield=True):
            self._end_route(Gone.on_purpose("The session was closed", Status.CLOSED))
            with anyio.move_on_after(self.timeouts.startup):
                async with self._lifecycle:
                    current, self.current = self.current, None
                    if current is not None:
                        await current.kill()

    async def _watch(self, interpreter: Interpreter) -> None:
        """Wait for ``interpreter`` to end; if nobody asked for that, report and relaunch."""
        gone = await interpreter.wait()
        if interpreter is not self.current or self._closing:
            return
        # Not settled from here on: a run must not be sent to it while it is cleaned up.
        self.current = None
        recovered = self._recovery = anyio.Event()
        try:
            with anyio.CancelScope(shield=True):  # a shutdown now leaves it to this kill
                await interpreter.kill()  # what it left behind
            logger.log(logging.INFO if gone.by_code else logging.WARNING, "%s", gone.description)
            untaken = self._untaken(interpreter)
            if untaken is None and self.route is not None and not self.route.finished.is_set():
                self._end_route(gone)
            elif untaken is None:  # no run open, or its end is there but its caller is slow
                self.unreported = gone
            async with self._lifecycle:
                if not self._closing and self.current is None:
                    with contextlib.suppress(KernelStartError):
                        await self._relaunch()
                if untaken is not None:
                    await self._send_again(untaken, gone)
        finally:
            recovered.set()

    def _untaken(self, interpreter: Interpreter) -> tuple[Route, str, Any] | None:
        """The open run, if ``interpreter`` died before it took the run's code (it says
        so with :class:`~.items.Begun`): that code never ran, and is sent again once."""
        sent = self._sent
        if sent is None or not getattr(interpreter, "announces_begin", False):
            return None
        route = sent[0]
        if route is not self.route or route.finished.is_set() or route.begun or route.left:
            return None
        self._sent = None  # once: a second death before it begins is reported
        return sent

    async def _send_again(self, sent: tuple[Route, str, Any], gone: Gone) -> None:
        """Run ``sent`` in the new interpreter, after the news of the death; if there is
        none, or the run was ended meanwhile, the run ends with the death as before."""
        route, code, options = sent
        if route is not self.route or route.finished.is_set():
            return
        current = self.current
        if current is None or route.left:
            self._end_route(gone)
            return
        logger.info("%s died before it took a run; the run goes to the new one", self.who)
        for message in news_between_runs(route.tag, death=gone, late=[], dropped=0, who=self.who):
            await route.put(message)
        await current.submit(code, options, route)

    # -- runs ------------------------------------------------------------------

    async def submit(self, route: Route, code: str, options: Any) -> None:
        """Open ``route`` as the run and send ``code``; the interpreter must be settled."""
        current = self.current
        if current is None:
            raise KernelStartError(f"{self.who} is not running")
        self.route = route
        self._sent = (route, code, options)
        await current.submit(code, options, route)

    def release(self, route: Route) -> None:
        """The run is over: its route closes, and its late output is kept for the next."""
        if self.route is route:
            self.route = None
        if self._sent is not None and self._sent[0] is route:
            self._sent = None
        self.late.retire(route)
        route.close()

    async def deliver(self, item: Any, key: object = None) -> None:
        """Hand ``item`` to the open run it belongs to, or keep it as late output."""
        route = self.route
        if route is not None and key in (None, route.key):
            if not route.finished.is_set():
                await route.put(item)
                return
            # Its run is over but not released yet (the caller has not read the
            # end): what comes now is late output of that run, not the one before.
            self.late.retire(route)
        if isinstance(item, Output):
            self.late.keep(item, key)

    def _end_route(self, gone: Gone) -> None:
        """End the open run with ``gone``; if its caller left, a loss of state that
        caller did not ask for (a death, the ladder's restart) is the next run's news."""
        route, self.route = self.route, None
        if route is None:
            return
        if route.left and not route.finished.is_set() and gone.status not in _ASKED_FOR:
            self.unreported = gone
        route.end(gone)

    def news(self, reply_to: str) -> list[Message]:
        """What happened since the last run: a death nobody saw, late output."""
        gone, self.unreported = self.unreported, None
        late, dropped = self.late.take()
        return news_between_runs(reply_to, death=gone, late=late, dropped=dropped, who=self.who)
