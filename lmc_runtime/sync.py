"""The sync layer: a blocking portal that is safe to interrupt while it starts, an
async message stream pulled through it, and :class:`PortalHost`, the lifecycle
``Computer`` and ``RemoteComputer`` share: one async core, opened by ``async
with`` or, on first sync use, in a portal of its own.

Each message is one task in the portal's event loop, so a caller that stops
reading, or is interrupted by a signal in its own thread, never leaves the
stream half-run: the pending step is cancelled in the loop (which stops the
code) and the stream is closed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
import threading
import weakref
from collections.abc import AsyncGenerator, Iterator
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, AsyncExitStack, ExitStack
from typing import Any, Self

import anyio
from anyio.from_thread import BlockingPortal

from . import replies
from .errors import UsageError
from .messages import Message

__all__ = ["PortalHost", "iterate_in_portal", "start_portal"]

#: The asyncio event loop of each portal :func:`start_portal` started, which a
#: stream's steps are handed to directly: a task of the portal costs ~4 times the
#: hop itself (its task group, cancel scope and bookkeeping), on every message.
_LOOPS: weakref.WeakKeyDictionary[BlockingPortal, tuple[asyncio.AbstractEventLoop, int]] = (
    weakref.WeakKeyDictionary()
)
#: How often a caller waiting for a step checks that the loop still runs.
_LOOP_CHECK = 1.0


def _wait_uninterrupted(
    future: Future[BlockingPortal],
) -> tuple[BlockingPortal, BaseException | None]:
    """The portal ``future`` gives, and the interruption (Ctrl-C) that came meanwhile."""
    interrupted: BaseException | None = None
    while True:
        try:
            return future.result(), interrupted
        except BaseException as exc:
            # The event loop failed to start: that is the error. Regression: a
            # Ctrl-C that came as the portal was ready was taken for that failure,
            # and the portal was never stopped (its thread lived on).
            if future.done() and future.exception() is not None:
                raise
            interrupted = interrupted or exc


@contextlib.contextmanager
def start_portal() -> Iterator[BlockingPortal]:
    """An event loop in a daemon thread, and the blocking portal into it.

    Regression: with anyio's ``start_blocking_portal``, a Ctrl-C while it waited
    for the portal left that portal never stopped, and its thread was joined
    forever (the process hung). Here an interruption during the start is held
    until the portal exists, the portal is stopped, and then it is raised.
    """
    future: Future[BlockingPortal] = Future()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            _LOOPS[portal] = (asyncio.get_running_loop(), threading.get_ident())
            future.set_result(portal)
            await portal.sleep_until_stopped()

    def main() -> None:
        try:
            anyio.run(serve, backend="asyncio")
        except BaseException as exc:
            if not future.done():
                future.set_exception(exc)

    thread = threading.Thread(target=main, daemon=True, name="lmc-portal")
    thread.start()
    portal, interrupted = _wait_uninterrupted(future)
    failed = interrupted is not None
    try:
        if interrupted is not None:
            raise interrupted
        yield portal
    except BaseException:
        failed = True
        raise
    finally:
        # Closed by the collector as the interpreter exits (a Computer never closed, held
        # by a module's global): the portal's daemon thread no longer runs, and a call
        # would wait for it for good. The atexit hook of what it owned has ended it.
        if not sys.is_finalizing():
            with contextlib.suppress(RuntimeError):
                portal.call(portal.stop, failed)
            thread.join()


class _LoopEnded(RuntimeError):
    """The portal's event loop ended while a step waited to run."""


class _Step:
    """One step of a message stream, run as a task of the portal's event loop: the
    next message, and the stream closed at once in the same task if it is the final
    one (a hop less)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stream: AsyncGenerator[Message, None]):
        self.loop = loop
        self.result: Future[Message] = Future()
        self.ended = threading.Event()
        self.closed = False
        self._task: asyncio.Task[Message] | None = None
        loop.call_soon_threadsafe(self._start, stream)  # RuntimeError once the loop closed

    async def _next(self, stream: AsyncGenerator[Message, None]) -> Message:
        message = await stream.__anext__()
        if message.is_final:
            self.closed = True
            await stream.aclose()
        return message

    def _start(self, stream: AsyncGenerator[Message, None]) -> None:
        self._task = self.loop.create_task(self._next(stream))
        self._task.add_done_callback(self._finish)

    def _finish(self, task: asyncio.Task[Message]) -> None:
        if task.cancelled():
            self.result.cancel()
        elif (error := task.exception()) is not None:
            self.result.set_exception(error)
        else:
            self.result.set_result(task.result())
        self.ended.set()

    def wait(self) -> Message:
        """The message, waited for as long as the loop runs."""
        while True:
            try:
                return self.result.result(timeout=_LOOP_CHECK)
            except concurrent.futures.TimeoutError:
                if self.loop.is_closed():
                    raise _LoopEnded("the event loop ended during the step") from None

    def cancel(self, wait: float) -> None:
        """Cancel the task in the loop (after it started: the calls keep their
        order), and wait up to ``wait`` s for it to wind down."""
        with contextlib.suppress(RuntimeError):  # the loop has closed: nothing runs
            self.loop.call_soon_threadsafe(lambda: self._task and self._task.cancel())
            self.ended.wait(wait)


def _loop_of(portal: BlockingPortal) -> asyncio.AbstractEventLoop | None:
    """The event loop of ``portal`` if :func:`start_portal` started it and this
    thread is not the loop's own (where the portal's tasks refuse to start)."""
    loop, thread = _LOOPS.get(portal, (None, 0))
    return loop if thread != threading.get_ident() else None


def _close(portal: BlockingPortal, stream: AsyncGenerator[Any, None]) -> None:
    loop = _loop_of(portal)
    with contextlib.suppress(Exception):
        if loop is None:
            portal.call(stream.aclose)
        else:
            asyncio.run_coroutine_threadsafe(stream.aclose(), loop).result()


def iterate_in_portal(
    portal: BlockingPortal, stream: AsyncGenerator[Message, None], *, cancel_wait: float
) -> Iterator[Message]:
    """Yield ``stream``'s messages in this thread until its final ``active_line`` null.

    ``cancel_wait`` bounds how long an interrupted caller waits for the
    cancelled step to wind down before the interruption propagates.
    """
    loop = _loop_of(portal)
    if loop is None:  # a portal of anyio's own: one of its tasks a message
        yield from _iterate_in_tasks(portal, stream, cancel_wait=cancel_wait)
        return
    reply_to: str | None = None
    closed = False
    try:
        while True:
            try:
                step = _Step(loop, stream)
            except RuntimeError:  # the Computer was closed between two messages
                closed = True
                yield from _closed_notice(reply_to)
                return
            try:
                message = step.wait()
            except StopAsyncIteration:
                return
            except _LoopEnded:  # closed while the step waited to run
                closed = True
                yield from _closed_notice(reply_to)
                return
            except BaseException:
                # Ctrl-C or a signal in this thread: cancel the step in the event
                # loop too (which stops the code), or it would hold the session.
                step.cancel(cancel_wait)
                raise
            closed = step.closed
            reply_to = message.in_reply_to
            yield message
            if message.is_final:
                return
    finally:
        if not closed:
            _close(portal, stream)


def _closed_notice(reply_to: str | None) -> Iterator[Message]:
    if reply_to is not None:
        yield replies.notice(
            "The Computer was closed while this code ran; its state is gone.",
            replies.Status.CLOSED,
            reply_to,
            state_lost=True,
        )
        yield replies.active_line(None, reply_to, status=replies.Status.CLOSED, state_lost=True)


def _iterate_in_tasks(
    portal: BlockingPortal, stream: AsyncGenerator[Message, None], *, cancel_wait: float
) -> Iterator[Message]:
    reply_to: str | None = None
    try:
        while True:
            try:
                step = portal.start_task_soon(stream.__anext__)
            except RuntimeError:  # the Computer was closed between two messages
                yield from _closed_notice(reply_to)
                return
            try:
                message = step.result()
            except StopAsyncIteration:
                return
            except BaseException:
                step.cancel()
                concurrent.futures.wait([step], timeout=cancel_wait)
                raise
            reply_to = message.in_reply_to
            yield message
            if message.is_final:
                return
    finally:
        with contextlib.suppress(Exception):
            portal.call(stream.aclose)


class PortalHost:
    """An async lifespan (:meth:`_lifespan`, given by the subclass) opened by ``async
    with`` or, on first sync use, in a blocking portal of its own; ``aclose`` or
    ``close`` ends it, and it cannot be opened again. ``_noun`` names the class in
    the errors its misuse raises."""

    _noun = "object"
    _stack: AsyncExitStack | None = None
    _sync: ExitStack | None = None
    _portal: BlockingPortal | None = None
    _closed: bool = False

    def _lifespan(self) -> AbstractAsyncContextManager[None]:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        if self._stack is not None or self._portal is not None:
            raise UsageError(f"this {self._noun} is already open")
        stack = AsyncExitStack()
        await stack.enter_async_context(self._lifespan())
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the lifespan opened by ``async with``."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()
        self._closed = True

    def _ensure_portal(self) -> BlockingPortal:
        if self._portal is None:
            if self._stack is not None:
                raise UsageError(f"this {self._noun} is open in async code: use arun, not run")
            if self._closed:
                raise UsageError(f"this {self._noun} is closed; create a new one")
            with ExitStack() as sync:  # unwound if the start fails or is interrupted
                portal = sync.enter_context(start_portal())
                sync.enter_context(portal.wrap_async_context_manager(self._lifespan()))
                self._sync, self._portal = sync.pop_all(), portal
        return self._portal

    def __enter__(self) -> Self:
        self._ensure_portal()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """End the lifespan (the sync form of :meth:`aclose`)."""
        sync, self._sync, self._portal = self._sync, None, None
        if sync is not None:
            sync.close()
        self._closed = True
