"""Ending running executions first when the service shuts down.

Every streamed execution (NDJSON or WebSocket) runs inside
:meth:`Drain.execution`. On SIGTERM the server calls :meth:`Drain.drain`
before it closes any connection: each running execution is cancelled (which
stops its code) and ends with the usual final message, a ``console``
``active_line`` null whose ``extras.status`` is ``closed``, so that a client
can tell a shutdown from a broken connection.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from starlette.requests import HTTPConnection

from .. import replies
from ..messages import Message

__all__ = ["Drain", "closed_replies", "drain_of"]

logger = logging.getLogger(__name__)


def closed_replies(reply_to: str | None) -> list[Message]:
    """The last messages of an execution the shutdown stopped."""
    return [
        replies.notice(
            "The service is shutting down: this execution was stopped and the session's "
            "state is gone.",
            "closed",
            reply_to,
            state_lost=True,
        ),
        replies.active_line(None, reply_to, status="closed", state_lost=True),
    ]


class Drain:
    """The running executions of one service, and whether it is shutting down."""

    def __init__(self) -> None:
        self.draining = False
        self._running: set[anyio.CancelScope] = set()
        self._idle: anyio.Event | None = None

    @property
    def running(self) -> int:
        return len(self._running)

    @asynccontextmanager
    async def execution(self) -> AsyncIterator[anyio.CancelScope]:
        """Register one execution until the block ends (its final messages
        included). Run its stream inside the yielded scope: the shutdown cancels
        it (at once if the shutdown has begun); then ``cancelled_caught`` is
        set and the caller sends :func:`closed_replies`."""
        scope = anyio.CancelScope()
        if self.draining:
            scope.cancel()
        self._running.add(scope)
        try:
            yield scope
        finally:
            self._running.discard(scope)
            if not self._running and self._idle is not None:
                self._idle.set()

    async def drain(self, timeout: float) -> None:
        """Stop every running execution; wait (at most ``timeout`` s) until each
        has sent its final message."""
        self.draining = True
        if not self._running:
            return
        logger.info("ending %d running executions before shutting down", len(self._running))
        self._idle = anyio.Event()
        for scope in list(self._running):
            scope.cancel()
        with anyio.move_on_after(timeout):
            await self._idle.wait()
        if self._running:
            logger.warning("%d executions did not end within %g s", len(self._running), timeout)


def drain_of(connection: HTTPConnection) -> Drain:
    """The drain of the service that ``connection`` reached."""
    drain = connection.app.state.drain
    assert isinstance(drain, Drain)
    return drain
