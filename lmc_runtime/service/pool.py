"""Pre-started sandboxed Python sessions, so a new session is ready at once.

The pool's size follows demand (:class:`~.demand.Demand`): never less than the
configured floor, it grows towards its ceiling when creations come faster than
it refills, starting up to one session per core at a time, and shrinks back,
ending warm sessions no one took, once bursts have stopped for the cool-down.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator

import anyio

from .demand import Demand
from .session import ServiceSession

__all__ = ["Pool", "host_has_memory"]

logger = logging.getLogger(__name__)

#: After a pooled session fails to start, wait this long before the next try.
_RETRY_AFTER = 2.0
#: The pool grows past its floor only while the host has this much memory available.
_MEMORY_RESERVE = 1 << 30


def host_has_memory(reserve: int = _MEMORY_RESERVE) -> bool:
    """Whether the host has ``reserve`` bytes available (true where it cannot tell)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 >= reserve
    except (OSError, ValueError, IndexError):
        logger.debug("available memory unknown", exc_info=True)
    return True


class Pool:
    """Keeps warm sessions, as many as :attr:`demand` wants; :meth:`take` hands one out.

    ``room()`` says whether the service has room for one more session of any
    kind: warm sessions count against the service's maximum like the others, so
    the pool shrinks when clients need the room and refills when they leave.
    ``memory()``: whether the host has memory for a warm session past the floor.
    Clients the pool could serve go first: it refills once none is waiting
    (:meth:`serving`), so that a burst served from the pool gets the CPU.
    """

    def __init__(
        self,
        demand: Demand,
        start: Callable[[], Awaitable[ServiceSession]],
        room: Callable[[], bool] = lambda: True,
        *,
        memory: Callable[[], bool] = host_has_memory,
    ) -> None:
        self.demand = demand
        self._start = start
        self._room = room
        self._memory = memory
        self._waiting = 0
        self._ready: deque[ServiceSession] = deque()
        self._wanted = anyio.Event()
        self._closing = False
        self._retry_at = -math.inf
        #: Sessions the pool is starting now (at most ``demand.parallel``).
        self.starting = 0

    @property
    def ready_count(self) -> int:
        return len(self._ready)

    @property
    def target(self) -> int:
        """How many warm sessions the pool aims at now."""
        return self.demand.target(anyio.current_time())

    def wake(self) -> None:
        """Look again whether the pool is short (a session ended, room was made)."""
        self._wanted.set()

    def evict(self) -> bool:
        """End one warm session to make room for another session; False if none."""
        if not self._ready:
            return False
        self._ready.popleft().stop("its room was needed for a new session")
        return True

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """While a client the pool could serve waits for its session (demand grows
        by one; no refill starts until no such client waits)."""
        self.demand.arrived(anyio.current_time())
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1
            self._wanted.set()

    def take(self) -> ServiceSession | None:
        """A warm session, or None if none is ready."""
        self._wanted.set()
        while self._ready:
            session = self._ready.popleft()
            if not session.ended.is_set():
                return session
        return None

    def drain(self) -> list[ServiceSession]:
        """Every warm session (for shutdown); no more are started."""
        self._closing = True
        self._wanted.set()
        sessions = list(self._ready)
        self._ready.clear()
        return sessions

    async def run(self) -> None:
        """Start and end warm sessions whenever the pool is off its target."""
        async with anyio.create_task_group() as tg:
            while not self._closing:
                self._wanted = anyio.Event()
                now = anyio.current_time()
                target = self.demand.target(now)
                self._forget_ended()
                self._shrink(target)
                if self._may_start(target, now):
                    self.starting += 1
                    tg.start_soon(self._start_one)
                    continue
                wake_at = min(self.demand.falls_at(now) or math.inf, self._later(now))
                with anyio.move_on_at(wake_at):
                    await self._wanted.wait()

    def _later(self, now: float) -> float:
        """When a failed start may be tried again (infinity: not waiting for that)."""
        return self._retry_at if self._retry_at > now else math.inf

    def _may_start(self, target: int, now: float) -> bool:
        have = len(self._ready) + self.starting
        if have >= target or self.starting >= self.demand.parallel or now < self._retry_at:
            return False
        if self._waiting or not self._room():
            return False
        return have < self.demand.floor or self._memory()

    def _forget_ended(self) -> None:
        if any(session.ended.is_set() for session in self._ready):
            self._ready = deque(each for each in self._ready if not each.ended.is_set())

    def _shrink(self, target: int) -> None:
        while len(self._ready) > target:
            session = self._ready.popleft()
            session.stop("the pool shrank: fewer sessions are being asked for")
            logger.info("pool: ended warm session %s (target %d)", session.id, target)

    async def _start_one(self) -> None:
        started = time.monotonic()
        try:
            session = await self._start()
        finally:
            self.starting -= 1
            self._wanted.set()
        if session.start_error is not None:
            logger.warning("a pooled session did not start: %r", session.start_error)
            self._retry_at = anyio.current_time() + _RETRY_AFTER
            return
        self.demand.started(time.monotonic() - started)
        if self._closing:
            session.stop("the service is shutting down")
        elif not self._room():  # clients took the room while it started
            session.stop("its room was needed for a new session")
        else:
            self._ready.append(session)
