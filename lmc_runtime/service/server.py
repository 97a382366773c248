"""Running the application under uvicorn, with a graceful shutdown on SIGINT/SIGTERM.

The listening socket is bound before anything else starts (:func:`listen`, from
:mod:`.sockets`), so that a taken port is reported at once; "listening" is
announced once the application has started and the socket is served. A start
that fails (the application's lifespan) is caught and reported by the caller,
never a traceback.

On a signal, running executions end first, each with a final ``closed``
message (:mod:`.drain`); then the connections close and every session with
its processes. Connections have deadlines and a cap (:mod:`.connections`), in
the set-up every HTTP door shares (:mod:`.hardened`).
"""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Any

import uvicorn
from starlette.types import Message, Receive, Scope, Send
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from ..web.connections import ConnectionLimits, connection_cap
from ..web.hardened import HardenedServer, backlog, hardened_config
from ..web.scoped import ScopedMiddleware
from ..web.sockets import ListenError, listen, url_of
from .access import AccessLog
from .app import Extension, create_app
from .datadir import DataDirLock
from .drain import Drain
from .settings import ServiceSettings

__all__ = ["ListenError", "StartupFailed", "backlog", "listen", "serve", "url_of"]

logger = logging.getLogger(__name__)


class StartupFailed(RuntimeError):
    """The application did not start; the message says why, in one line."""


def one_line(exc: BaseException) -> str:
    """What went wrong, in one line: the first leaf of exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    return text if text else type(exc).__name__


class _StartupGuard(ScopedMiddleware):
    """The application, whose failed start is kept (and logged only when
    debugging) instead of uvicorn's traceback."""

    handles = "lifespan"
    error: BaseException | None = None

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def quiet(message: Message) -> None:
            nonlocal started
            if message["type"] == "lifespan.startup.complete":
                started = True
            elif message["type"] == "lifespan.startup.failed":
                message = {"type": message["type"], "message": ""}
            await send(message)

        try:
            await self.app(scope, receive, quiet)
        except Exception as exc:
            if started:
                raise
            logger.debug("the service did not start", exc_info=exc)
            self.error = exc


class _Server(HardenedServer):
    """uvicorn's server, which says when it serves and ends running executions
    before its own shutdown."""

    def __init__(
        self, config: uvicorn.Config, drain: Drain, grace: float, ready: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self._drain = drain
        self._grace = grace
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and not self.should_exit:
            self._ready()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self._drain.drain(self._grace)
        await super().shutdown(sockets)


class _WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSockets, with a handshake refused by a denial
    response (the 401, 403 or 404 of :mod:`.ws`) counted as completed once that
    response is sent. uvicorn 0.54 counts only an accept or a close, and logged
    "ASGI callable returned without completing handshake" at ERROR for every
    refusal: anyone, with no token, could fill the log with errors. (The legacy
    ``websockets`` implementation is deprecated; ``wsproto`` is not a dependency.)"""

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            self.handshake_complete = True


def _announce(sock: socket.socket) -> Callable[[], None]:
    def ready() -> None:
        sys.stdout.write(f"lmc serve: listening on {url_of(sock)}\n")
        sys.stdout.flush()

    return ready


def serve(
    settings: ServiceSettings,
    sock: socket.socket,
    lock: DataDirLock,
    limits: ConnectionLimits | None = None,
    extensions: Sequence[Extension] = (),
) -> None:
    """Serve on ``sock`` (bound by :func:`listen`) until SIGINT or SIGTERM; then
    close every session and its processes. ``lock`` is the data directory's,
    held; ``extensions``, the application's (see :func:`.create_app`).
    :class:`StartupFailed` if the application did not start."""
    limits = limits or ConnectionLimits()
    app = create_app(settings, extensions)
    drain = app.state.drain
    assert isinstance(drain, Drain)
    app.state.service.manager.data_lock = lock
    guard = _StartupGuard(app)
    config = hardened_config(
        AccessLog(guard),
        limits,
        ws=_WebSocketProtocol,
        # A WebSocket frame carries one code message: the HTTP body limit applies.
        ws_max_size=settings.max_request_bytes,
        lifespan="on",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=int(max(1, settings.shutdown_grace)),
    )
    logger.info("serving at most %d connections at once", connection_cap(limits))
    server = _Server(config, drain, settings.shutdown_grace, _announce(sock))
    try:
        server.run(sockets=[sock])
    except SystemExit:  # uvicorn's way out of a failed start
        if guard.error is None:
            raise
    if guard.error is not None:
        raise StartupFailed(one_line(guard.error))
