"""Pre-started sandboxed Python sessions, so a new session is ready at once."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable

import anyio

from .session import ServiceSession

__all__ = ["Pool"]

logger = logging.getLogger(__name__)

#: After a pooled session fails to start, wait this long before the next try.
_RETRY_AFTER = 2.0


class Pool:
    """Keeps ``size`` warm sessions; :meth:`take` hands one out and a new one starts."""

    def __init__(self, size: int, start: Callable[[], Awaitable[ServiceSession]]) -> None:
        self.size = size
        self._start = start
        self._ready: deque[ServiceSession] = deque()
        self._wanted = anyio.Event()
        self._closing = False

    @property
    def ready_count(self) -> int:
        return len(self._ready)

    def take(self) -> ServiceSession | None:
        """A warm session, or None if none is ready."""
        while self._ready:
            session = self._ready.popleft()
            if not session.ended.is_set():
                self._wanted.set()
                return session
        self._wanted.set()
        return None

    def drain(self) -> list[ServiceSession]:
        """Every warm session (for shutdown); no more are started."""
        self._closing = True
        self._wanted.set()
        sessions = list(self._ready)
        self._ready.clear()
        return sessions

    async def run(self) -> None:
        """Refill the pool, one session at a time, whenever it is short."""
        while not self._closing:
            if len(self._ready) >= self.size:
                self._wanted = anyio.Event()
                await self._wanted.wait()
                continue
            session = await self._start()
            if session.start_error is not None:
                logger.warning("a pooled session did not start: %r", session.start_error)
                with anyio.move_on_after(_RETRY_AFTER):
                    self._wanted = anyio.Event()
                    await self._wanted.wait()
                continue
            if self._closing:
                session.stop("the service is shutting down")
            else:
                self._ready.append(session)
