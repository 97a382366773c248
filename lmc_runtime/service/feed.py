"""Session changes, for the subscribers of ``GET /v1/events`` (see :mod:`.events`).

Each subscriber has a queue of its own, bounded: one that does not read its
events fast enough is dropped (its feed ends), so that no client can make the
server hold more than :data:`QUEUE_SIZE` events for it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["QUEUE_SIZE", "Event", "SessionEvents"]

logger = logging.getLogger(__name__)

#: Events held for one subscriber before it is dropped.
QUEUE_SIZE = 256

Event = dict[str, Any]


class SessionEvents:
    """Subscribers to session changes, each with a bounded queue."""

    def __init__(self, queue_size: int = QUEUE_SIZE) -> None:
        self.queue_size = queue_size
        #: How an event shows a session (the application sets it: the API's view).
        self.describe: Callable[[Any], dict[str, Any]] | None = None
        self._subscribers: set[MemoryObjectSendStream[Event]] = set()
        #: Subscribers dropped for reading too slowly, since the start.
        self.dropped = 0

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def subscribe(self) -> MemoryObjectReceiveStream[Event]:
        send, receive = anyio.create_memory_object_stream[Event](self.queue_size)
        self._subscribers.add(send)
        return receive

    def unsubscribe(self, receive: MemoryObjectReceiveStream[Event]) -> None:
        receive.close()  # its send side is dropped at the next publish

    def publish(self, kind: str, session: Any) -> None:
        """Hand one event about ``session`` to every subscriber, without waiting for any."""
        if not self._subscribers:
            return
        event: Event = {"type": kind, "id": session.id, "at": time.time()}
        if self.describe is not None:
            event["session"] = self.describe(session)
        for send in list(self._subscribers):
            try:
                send.send_nowait(event)
            except anyio.WouldBlock:
                self.dropped += 1
                logger.info("an events subscriber fell %d events behind: dropped", self.queue_size)
                self._drop(send)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._drop(send)

    def _drop(self, send: MemoryObjectSendStream[Event]) -> None:
        self._subscribers.discard(send)
        send.close()
