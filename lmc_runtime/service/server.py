"""Running the application under uvicorn, with a graceful shutdown on SIGINT/SIGTERM.

On a signal, running executions end first, each with a final ``closed``
message (:mod:`.drain`); then the connections close and every session with
its processes. Connections have deadlines and a cap (:mod:`.connections`).
"""

from __future__ import annotations

import logging
import socket

import uvicorn

from .app import create_app
from .connections import ConnectionLimits, connection_cap, guarded_protocol
from .drain import Drain
from .settings import ServiceSettings

__all__ = ["serve"]

logger = logging.getLogger(__name__)


class _Server(uvicorn.Server):
    """uvicorn's server, which ends running executions before its own shutdown."""

    def __init__(self, config: uvicorn.Config, drain: Drain, grace: float) -> None:
        super().__init__(config)
        self._drain = drain
        self._grace = grace

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self._drain.drain(self._grace)
        await super().shutdown(sockets)


def serve(settings: ServiceSettings, limits: ConnectionLimits | None = None) -> None:
    """Serve until SIGINT or SIGTERM; then close every session and its processes."""
    limits = limits or ConnectionLimits()
    app = create_app(settings)
    drain = app.state.drain
    assert isinstance(drain, Drain)
    cap = connection_cap(limits)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=guarded_protocol(limits),
        # asyncio accepts up to this many connections at once, before any can be
        # closed to make room: kept well below the cap, a burst cannot use up
        # the file descriptors that the cap leaves free.
        backlog=max(16, cap // 4),
        ws="websockets-sansio",
        # A WebSocket frame carries one code message: the HTTP body limit applies.
        ws_max_size=settings.max_request_bytes,
        lifespan="on",
        log_level="warning",
        timeout_graceful_shutdown=int(max(1, settings.shutdown_grace)),
        server_header=False,
    )
    logger.info("serving at most %d connections at once", cap)
    _Server(config, drain, settings.shutdown_grace).run()
