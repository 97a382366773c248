"""Running the application under uvicorn, with a graceful shutdown on SIGINT/SIGTERM."""

from __future__ import annotations

import logging

import uvicorn

from .app import create_app
from .settings import ServiceSettings

__all__ = ["serve"]

logger = logging.getLogger(__name__)


def serve(settings: ServiceSettings) -> None:
    """Serve until SIGINT or SIGTERM; then close every session and its processes."""
    config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        ws="websockets-sansio",
        # A WebSocket frame carries one code message: the HTTP body limit applies.
        ws_max_size=settings.max_request_bytes,
        lifespan="on",
        log_level="warning",
        timeout_graceful_shutdown=int(max(1, settings.shutdown_grace)),
        server_header=False,
    )
    uvicorn.Server(config).run()
