"""HTTP connections with deadlines and a cap, so that slow clients cannot hold the service.

* **Headers** must arrive whole within ``header_timeout`` seconds of the
  connection (or of the previous response): a deadline, not reset by each byte.
* **A body** must keep coming: at least ``min_body_rate`` bytes a second,
  checked every ``body_timeout`` seconds (time the server itself is not
  reading does not count). A body still coming after its response is
  discarded for ``header_timeout`` seconds at most.
* **The cap**: at most ``max_connections`` connections, and never more than
  half the file descriptor limit. A new connection past the cap closes the
  connection that has waited longest for its headers; only when none is
  waiting is the new one refused with a 503.

A request that times out gets a JSON 408 (``request_timeout``) if it had
started and nothing has been answered yet; then the connection is closed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, ClassVar

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

__all__ = ["ConnectionLimits", "GuardedH11Protocol", "connection_cap", "guarded_protocol"]

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


def connection_cap(limits: ConnectionLimits) -> int:
    """The most connections served now: ``max_connections``, and at most half
    the file limit (the other half is for sessions, their kernels and files)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limits.max_connections
    return max(8, min(limits.max_connections, soft // 2))


#: Phases a client can stall in; ``None`` when the server is the one working.
_HEADERS, _BODY, _LINGER, _UPGRADED = "headers", "body", "linger", "upgraded"


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and the cap of :class:`ConnectionLimits`."""

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._phase: str | None = None
        self._phase_since = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._received = 0
        self._mark = 0

    # -- the protocol's events -----------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._update_phase()
        self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._received += len(data)
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        self._update_phase()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._update_phase()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._set_phase(_UPGRADED)
        super().handle_websocket_upgrade(event)

    # -- deadlines -------------------------------------------------------------

    def _current_phase(self) -> str | None:
        if self._phase == _UPGRADED:
            return _UPGRADED
        state = self.conn.their_state
        if state is h11.IDLE:
            return _HEADERS
        if state is h11.SEND_BODY:
            answered = self.cycle is not None and self.cycle.response_complete
            return _LINGER if answered else _BODY
        return None

    def _update_phase(self) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        phase = self._current_phase()
        if phase != self._phase:
            self._set_phase(phase)

    def _set_phase(self, phase: str | None) -> None:
        self._cancel_timer()
        self._phase = phase
        self._phase_since = self.loop.time()
        self._mark = self._received
        if phase in (_HEADERS, _LINGER):
            self._timer = self.loop.call_later(self.limits.header_timeout, self._on_deadline)
        elif phase == _BODY:
            self._timer = self.loop.call_later(self.limits.body_timeout, self._on_body_check)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_deadline(self) -> None:
        self._timer = None
        if self._phase == _HEADERS and self._received > self._mark:
            seconds = self.limits.header_timeout
            self._close(408, "request_timeout", f"the request headers took more than {seconds:g} s")
        else:
            self._close()

    def _on_body_check(self) -> None:
        self._timer = None
        if self._phase != _BODY or self.transport.is_closing():
            return
        cycle = self.cycle
        server_waits = self.flow.read_paused or (
            cycle is not None and cycle.waiting_for_100_continue
        )
        wanted = self.limits.min_body_rate * self.limits.body_timeout
        if server_waits or self._received - self._mark >= wanted:
            self._mark = self._received
            self._timer = self.loop.call_later(self.limits.body_timeout, self._on_body_check)
            return
        if cycle is not None and cycle.response_started:
            self._close()
            return
        self._close(
            408,
            "request_timeout",
            f"the request body came slower than {self.limits.min_body_rate} bytes a second",
        )

    def _close(self, status: int | None = None, code: str = "", message: str = "") -> None:
        """Close the connection, first answering ``status`` if given; the request
        still running, if any, sees its client gone and cannot answer any more."""
        self._cancel_timer()
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        if status is not None:
            body = json.dumps({"error": {"code": code, "message": message}}).encode()
            head = (
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                "content-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
            )
            self.transport.write(head.encode() + body)
        self.transport.close()

    # -- the cap ---------------------------------------------------------------

    def _make_room(self) -> None:
        cap = connection_cap(self.limits)
        if len(self.connections) <= cap:
            return
        waiting = [
            c
            for c in self.connections
            if isinstance(c, GuardedH11Protocol)
            and c is not self
            and c._phase in (_HEADERS, _LINGER)
            and not c.transport.is_closing()
        ]
        if waiting:
            min(waiting, key=lambda c: c._phase_since)._close()
            return
        logger.warning("%d connections, all busy: a new one is refused", len(self.connections))
        self._close(503, "too_many_connections", f"the service serves at most {cap} connections")


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """The protocol class for uvicorn's ``http`` option, with ``limits``."""

    class Guarded(GuardedH11Protocol):
        pass

    Guarded.limits = limits
    return Guarded
