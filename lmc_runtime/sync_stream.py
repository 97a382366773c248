"""A run's message stream pulled, one message at a time, by a sync caller through
the portal of :func:`~lmc_runtime.sync.start_portal` (see :mod:`lmc_runtime.sync`).

Each step (the next message) is a plain asyncio task of the portal's event loop,
handed over with ``call_soon_threadsafe``: a task of the portal costs about four
times the hop itself (its task group, cancel scope and bookkeeping), on every
message. The step of the final message also closes the stream, in the loop. A
portal this module does not know (anyio's own) takes one of its tasks a step.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import weakref
from collections.abc import AsyncGenerator, Iterator
from concurrent.futures import Future
from typing import Any

from anyio.from_thread import BlockingPortal

from . import replies
from .messages import Message

__all__ = ["iterate_in_portal", "register_loop"]

#: The asyncio event loop of each portal :func:`start_portal` started, which a
#: stream's steps are handed to directly: a task of the portal costs ~4 times the
#: hop itself (its task group, cancel scope and bookkeeping), on every message.
_LOOPS: weakref.WeakKeyDictionary[BlockingPortal, tuple[asyncio.AbstractEventLoop, int]] = (
    weakref.WeakKeyDictionary()
)
#: How often a caller waiting for a step checks that the loop still runs.
_LOOP_CHECK = 1.0


def register_loop(portal: BlockingPortal) -> None:
    """Record ``portal``'s event loop and thread; called in that loop."""
    _LOOPS[portal] = (asyncio.get_running_loop(), threading.get_ident())


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
