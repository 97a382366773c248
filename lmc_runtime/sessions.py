"""A Computer's live sessions: one per language, started on first use.

A session starts once, under a lock per language, however many runs ask for
it at the same time. An interrupt that comes while a language is still
starting stops the runs waiting for it: they get no session, and say so,
instead of running code nobody wants any more.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable

import anyio

from .backends.base import Session
from .errors import UsageError

__all__ = ["Sessions", "weakly"]

logger = logging.getLogger(__name__)


class Sessions:
    """The sessions of one Computer; ``start(name)`` starts the one for ``name``."""

    def __init__(self, start: Callable[[str], Awaitable[Session]]) -> None:
        self._start = start
        self._sessions: dict[str, Session] = {}
        self._locks: dict[str, anyio.Lock] = {}
        #: Runs waiting for each language to start, and the languages whose
        #: waiting runs an interrupt has stopped.
        self._starting: dict[str, int] = {}
        self._interrupted: set[str] = set()

    def __contains__(self, name: object) -> bool:
        return name in self._sessions

    def running(self, name: str) -> Session | None:
        """The session for ``name`` if it was started, else None (nothing is started)."""
        return self._sessions.get(name)

    async def get(self, name: str) -> Session | None:
        """The session for ``name``, started if need be; None if an interrupt
        came while it started."""
        session = self._sessions.get(name)
        if session is not None:
            return session
        self._starting[name] = self._starting.get(name, 0) + 1
        try:
            session = await self._started(name)
        finally:
            self._starting[name] -= 1
            interrupted = name in self._interrupted
            if not self._starting[name]:
                self._interrupted.discard(name)
        return None if interrupted else session

    async def _started(self, name: str) -> Session:
        async with self._locks.setdefault(name, anyio.Lock()):
            session = self._sessions.get(name)
            if session is None:
                session = self._sessions[name] = await self._start(name)
            return session

    async def interrupt(self, name: str | None) -> None:
        """Interrupt ``name``'s running code (every language's, if None)."""
        for key, count in self._starting.items():
            if count and (name is None or key == name):
                self._interrupted.add(key)
        for key, session in list(self._sessions.items()):
            if name is None or key == name:
                await session.interrupt()

    async def restart(self, name: str) -> None:
        """Restart ``name``'s session, if it was started."""
        session = self._sessions.get(name)
        if session is not None:
            await session.restart()

    async def close(self) -> None:
        """Stop every session and what it started; a failure is logged, not raised."""
        sessions, self._sessions = list(self._sessions.items()), {}
        for name, session in sessions:
            try:
                await session.aclose()
            except Exception:
                logger.warning("closing the %s session failed", name, exc_info=True)


def weakly(method: Callable[[str], Awaitable[Session]]) -> Callable[[str], Awaitable[Session]]:
    """The bound ``method`` (a session start), referring to its object weakly: a
    Computer's sessions do not keep it alive. Once it is gone, a start raises."""
    ref = weakref.WeakMethod(method)

    async def start(name: str) -> Session:
        bound = ref()
        if bound is None:
            raise UsageError("this Computer is closed; create a new one")
        return await bound(name)

    return start
