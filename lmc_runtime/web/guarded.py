"""uvicorn's HTTP protocols with the deadlines and the cap of :mod:`.connections`.

:func:`guarded_protocol` picks httptools' parser when it is installed (the
``[serve]`` extra brings it: it parses a request in C, about a millisecond
sooner than h11 in pure Python), else h11. Each protocol tells its
:class:`~.connections.ConnectionGuard` what happens and which phase it is in.
"""

from __future__ import annotations

import asyncio
from importlib.util import find_spec
from typing import Any, ClassVar, cast

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from .bodies import invalid_http_body
from .connections import (
    BODY,
    HEADERS,
    LINGER,
    ConnectionGuard,
    ConnectionLimits,
    GuardedConnection,
)

__all__ = ["GuardedH11Protocol", "Guarding", "guarded_protocol"]

_Protocol = type[asyncio.Protocol]


class Guarding:
    """What both guarded protocols do alike, first in their bases: a guard made with the
    protocol, told when the connection is made and when it is lost."""

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()
    #: uvicorn's protocol's own: the server's open connections.
    connections: set[Any]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)  # type: ignore[call-arg]
        self.guard = ConnectionGuard(self.limits, cast(GuardedConnection, self))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self.guard.made(cast(asyncio.Transport, transport), self.connections)

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.lost()
        super().connection_lost(exc)  # type: ignore[misc]


class GuardedH11Protocol(Guarding, H11Protocol):
    """uvicorn's h11 protocol, guarded."""

    def data_received(self, data: bytes) -> None:
        self.guard.received(len(data))
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        """A request HTTP cannot parse is answered with a JSON problem, as every
        other error is (uvicorn's own answer is plain text)."""
        body = invalid_http_body(msg)
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

    def handle_events(self) -> None:
        super().handle_events()
        self.guard.update()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.guard.update()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self.guard.upgraded()
        super().handle_websocket_upgrade(event)

    def current_phase(self) -> str | None:
        state = self.conn.their_state
        if state is h11.IDLE:
            return HEADERS
        if state is h11.SEND_BODY:
            answered = self.cycle is not None and self.cycle.response_complete
            return LINGER if answered else BODY
        return None


def guarded_protocol(limits: ConnectionLimits) -> _Protocol:
    """The protocol class for uvicorn's ``http`` option, with ``limits``:
    httptools' when it is installed, else h11's."""
    httptools = find_spec("httptools") is not None
    base: _Protocol = GuardedH11Protocol
    if httptools:
        from .guarded_httptools import GuardedHttpToolsProtocol

        base = GuardedHttpToolsProtocol
    return type(base.__name__, (base,), {"limits": limits})
