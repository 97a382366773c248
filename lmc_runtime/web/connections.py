"""HTTP connections with deadlines and a cap, so that slow clients cannot hold the service.

* **Headers** must arrive whole within ``header_timeout`` seconds of the
  connection (or of the previous response): a deadline, not reset by each byte.
* **A body** must keep coming: at least ``min_body_rate`` bytes a second,
  checked every ``body_timeout`` seconds (time the server itself is not
  reading does not count). A body still coming after its response is
  discarded for ``header_timeout`` seconds at most.
* **The cap**: at most ``max_connections`` connections, and never more than
  half the file descriptor limit. A new connection past the cap closes the
  connection that has waited longest for its headers, or else the one whose
  body comes slowest, below ``min_body_rate`` (a 408); only when there is
  neither is the new one refused with a 503.

A request that times out gets a JSON 408 (``request_timeout``) if it had
started and nothing has been answered yet; then the connection is closed.

:class:`ConnectionGuard` keeps these rules for one connection; the uvicorn
protocols that it guards (h11, or httptools when installed) are in :mod:`.guarded`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Protocol

__all__ = [
    "BODY",
    "HEADERS",
    "LINGER",
    "ConnectionGuard",
    "ConnectionLimits",
    "GuardedConnection",
    "connection_cap",
    "raise_file_limit",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """How long a client may take, and how many connections are served at once."""

    header_timeout: float = 10.0
    body_timeout: float = 20.0
    min_body_rate: int = 1024
    max_connections: int = 1000

    def __post_init__(self) -> None:
        if self.header_timeout <= 0 or self.body_timeout <= 0:
            raise ValueError("the header and body timeouts must be positive")
        if self.min_body_rate < 0 or self.max_connections < 1:
            raise ValueError("min_body_rate must be >= 0 and max_connections >= 1")


#: How far :func:`raise_file_limit` lifts the soft limit on open files.
_FILES_WANTED = 65536


def raise_file_limit() -> int:
    """Lift this process's soft limit on open files towards its hard limit (at most
    65,536), as servers do: many hosts start processes at 1,024, which a few dozen
    sessions (their kernels' sockets, pipes and pidfds) and their clients use up.
    The limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= _FILES_WANTED:
        return soft
    wanted = _FILES_WANTED if hard == resource.RLIM_INFINITY else min(hard, _FILES_WANTED)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (OSError, ValueError) as exc:
            logger.warning("could not raise the open-file limit from %d: %s", soft, exc)
            return soft
        logger.info("raised the open-file limit from %d to %d", soft, wanted)
    return max(soft, wanted)


def connection_cap(limits: ConnectionLimits) -> int:
    """The most connections served now: ``max_connections``, and at most half
    the file limit (the other half is for sessions, their kernels and files)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limits.max_connections
    return max(8, min(limits.max_connections, soft // 2))


#: Phases a client can stall in; ``None`` when the server is the one working.
HEADERS, BODY, LINGER, _UPGRADED = "headers", "body", "linger", "upgraded"


class _Cycle(Protocol):
    """What the guard reads of uvicorn's request-response cycle (either protocol's)."""

    response_started: bool
    response_complete: bool
    disconnected: bool
    waiting_for_100_continue: bool
    message_event: asyncio.Event


class _Flow(Protocol):
    read_paused: bool


class GuardedConnection(Protocol):
    """A uvicorn HTTP protocol, as its :class:`ConnectionGuard` sees it."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def cycle(self) -> _Cycle | None: ...

    @property
    def flow(self) -> _Flow: ...

    def current_phase(self) -> str | None:
        """:data:`HEADERS`, :data:`BODY`, :data:`LINGER`, or None: the server works."""
        ...


class ConnectionGuard:
    """The deadlines of one connection, and its part in the cap."""

    def __init__(self, limits: ConnectionLimits, connection: GuardedConnection) -> None:
        self.limits = limits
        self._connection = connection
        self._transport: asyncio.Transport | None = None
        self._phase: str | None = None
        self._phase_since = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._received = 0
        #: What had come when the phase began, and at the body's last check.
        self._phase_received = self._mark = 0

    # -- what the protocol tells it --------------------------------------------

    def made(self, transport: asyncio.Transport, connections: Iterable[object]) -> None:
        """The connection is open (``connections``: every open one, this one too)."""
        self._transport = transport
        self.update()
        self._make_room(list(connections))

    def lost(self) -> None:
        self._cancel_timer()

    def received(self, size: int) -> None:
        self._received += size

    def upgraded(self) -> None:
        """A WebSocket now: no HTTP deadline applies."""
        self._set_phase(_UPGRADED)

    def update(self) -> None:
        """The protocol's state may have changed: start the deadline of its phase."""
        if self._transport is None or self._transport.is_closing() or self._phase == _UPGRADED:
            return
        phase = self._connection.current_phase()
        if phase != self._phase:
            self._set_phase(phase)

    # -- deadlines -------------------------------------------------------------

    def _set_phase(self, phase: str | None) -> None:
        self._cancel_timer()
        self._phase = phase
        loop = self._connection.loop
        self._phase_since = loop.time()
        self._mark = self._phase_received = self._received
        if phase in (HEADERS, LINGER):
            self._timer = loop.call_later(self.limits.header_timeout, self._on_deadline)
        elif phase == BODY:
            self._timer = loop.call_later(self.limits.body_timeout, self._on_body_check)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_deadline(self) -> None:
        self._timer = None
        if self._phase == HEADERS and self._received > self._mark:
            seconds = self.limits.header_timeout
            self.close(408, "request_timeout", f"the request headers took more than {seconds:g} s")
        else:
            self.close()

    def _on_body_check(self) -> None:
        self._timer = None
        if self._phase != BODY or self._transport is None or self._transport.is_closing():
            return
        cycle = self._connection.cycle
        server_waits = self._connection.flow.read_paused or (
            cycle is not None and cycle.waiting_for_100_continue
        )
        wanted = self.limits.min_body_rate * self.limits.body_timeout
        if server_waits or self._received - self._mark >= wanted:
            self._mark = self._received
            self._timer = self._connection.loop.call_later(
                self.limits.body_timeout, self._on_body_check
            )
            return
        if cycle is not None and cycle.response_started:
            self.close()
            return
        self.close(
            408,
            "request_timeout",
            f"the request body came slower than {self.limits.min_body_rate} bytes a second",
        )

    def close(self, status: int | None = None, code: str = "", message: str = "") -> None:
        """Close the connection, first answering ``status`` if given; the request
        still running, if any, sees its client gone and cannot answer any more."""
        self._cancel_timer()
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        cycle = self._connection.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
        if status is not None:
            body = json.dumps({"error": {"code": code, "message": message}}).encode()
            head = (
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                "content-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
            )
            transport.write(head.encode() + body)
        transport.close()

    # -- the cap ---------------------------------------------------------------

    def _waiting(self) -> bool:
        """Whether the client is the one the connection waits for, between requests."""
        transport = self._transport
        return (
            self._phase in (HEADERS, LINGER)
            and transport is not None
            and not (transport.is_closing())
        )

    def _body_rate(self, now: float) -> float | None:
        """Bytes a second of the body coming now, once it has come for a second; None
        when the client is not sending one (or the server is the one waiting)."""
        transport, cycle = self._transport, self._connection.cycle
        if self._phase != BODY or transport is None or transport.is_closing():
            return None
        if self._connection.flow.read_paused or (
            cycle is not None and cycle.waiting_for_100_continue
        ):
            return None
        seconds = now - self._phase_since
        return (self._received - self._phase_received) / seconds if seconds >= 1.0 else None

    def _make_room(self, connections: list[object]) -> None:
        cap = connection_cap(self.limits)
        if len(connections) <= cap:
            return
        waiting = [g for g in guards_of(connections, self) if g._waiting()]
        if waiting:
            min(waiting, key=lambda g: g._phase_since).close()
            return
        slowest = _slowest_body(guards_of(connections, self))
        if slowest is not None:
            rate = self.limits.min_body_rate
            slowest.close(
                408, "request_timeout", f"the request body came slower than {rate} bytes a second"
            )
            return
        logger.warning("%d connections, all busy: a new one is refused", len(connections))
        self.close(503, "too_many_connections", f"the service serves at most {cap} connections")


def guards_of(connections: Iterable[object], but: ConnectionGuard) -> list[ConnectionGuard]:
    """The guards of ``connections``, ``but`` one."""
    guards = (getattr(c, "guard", None) for c in connections)
    return [g for g in guards if isinstance(g, ConnectionGuard) and g is not but]


def _slowest_body(guards: list[ConnectionGuard]) -> ConnectionGuard | None:
    """The connection whose body comes slowest, if one comes slower than its limit
    allows (a client sending a body it never ends holds a place in the cap)."""
    if not guards:
        return None
    now = guards[0]._connection.loop.time()
    rated = [(rate, g) for g in guards if (rate := g._body_rate(now)) is not None]
    slow = [(rate, g) for rate, g in rated if rate < g.limits.min_body_rate]
    return min(slow, key=lambda pair: pair[0])[1] if slow else None
