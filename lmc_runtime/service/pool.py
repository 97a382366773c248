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
    """Keeps ``size`` warm sessions; :meth:`take` hands one out and a new one starts.

    ``room()`` says whether the service has room for one more session of any
    kind: warm sessions count against the service's maximum like the others, so
    the pool shrinks when clients need the room and refills when they leave.
    """

    def __init__(
        self,
        size: int,
        start: Callable[[], Awaitable[ServiceSession]],
        room: Callable[[], bool] = lambda: True,
    ) -> None:
        self.size = size
        self._start = start
        self._room = room
        self._ready: deque[ServiceSession] = deque()
        self._wanted = anyio.Event()
        self._closing = False
        #: Sessions the pool is starting now (0 or 1).
        self.starting = 0

    @property
    def ready_count(self) -> int:
        return len(self._ready)

    def wake(self) -> None:
        """Look again whether the pool is short (a session ended, room was made)."""
        self._wanted.set()

    def evict(self) -> bool:
        """End one warm session to make room for another session; False if none."""
        if not self._ready:
            return False
        self._ready.popleft().stop("its room was needed for a new session")
        return True

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
            if len(self._ready) >= self.size or not self._room():
                self._wanted = anyio.Event()
                await self._wanted.wait()
                continue
            self.starting = 1
            try:
                session = await self._start()
            finally:
                self.starting = 0
            if session.start_error is not None:
                logger.warning("a pooled session did not start: %r", session.start_error)
                with anyio.move_on_after(_RETRY_AFTER):
                    self._wanted = anyio.Event()
                    await self._wanted.wait()
                continue
            if self._closing:
                session.stop("the service is shutting down")
            elif not self._room():  # clients took the room while it started
                session.stop("its room was needed for a new session")
            else:
                self._ready.append(session)
