"""The feed of session changes: ``GET /v1/events``, as server-sent events.

The manager publishes ``created`` and ``ended``; a session publishes ``state``
when a run starts or ends. Each subscriber has a queue of its own, bounded: a
client that does not read its events fast enough is dropped (its stream ends
with a ``dropped`` event it may never read), so it cannot make the server hold
more than :data:`QUEUE_SIZE` events for it.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from .drain import Drain, drain_of
from .feed import Event
from .routes import require_token
from .state import info, service_of

__all__ = ["events_router"]

#: Seconds between keep-alive comments on an idle feed.
KEEPALIVE = 15.0


def _frame(event: Event) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


async def _next(receive: MemoryObjectReceiveStream[Event], drain: Drain) -> Event | None:
    """The next event; ``{}`` after :data:`KEEPALIVE` seconds without one; None
    when the feed ends (the subscriber was dropped, or the server shuts down).

    The wait is the only part under the drain's cancel scope: never a ``yield``."""
    async with drain.execution() as scope:
        with scope, anyio.move_on_after(KEEPALIVE):
            try:
                return await receive.receive()
            except anyio.EndOfStream:
                return None
    return None if scope.cancelled_caught else {}


def events_router() -> APIRouter:
    """``GET /v1/events``: a ``snapshot`` of the live sessions, then every change."""
    router = APIRouter(prefix="/v1", dependencies=[Depends(require_token)])

    @router.get(
        "/events",
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    async def session_events(request: Request) -> StreamingResponse:
        """Server-sent events: ``snapshot`` (every live session), then ``created``,
        ``state`` and ``ended``, each with its session's id."""
        manager = service_of(request).manager
        hub = manager.events
        receive = hub.subscribe()
        live = [s for s in manager.sessions.values() if not s.ended.is_set()]
        snapshot: Event = {
            "type": "snapshot",
            "at": time.time(),
            "sessions": [info(s).model_dump(mode="json") for s in live],
        }

        async def frames() -> AsyncIterator[bytes]:
            try:
                yield _frame(snapshot)
                while True:
                    event = await _next(receive, drain_of(request))
                    if event is None:
                        break
                    yield _frame(event) if event else b": keep-alive\n\n"
            finally:
                hub.unsubscribe(receive)

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)

    return router
