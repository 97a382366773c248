"""``lmc mcp --http``: the MCP server over streamable HTTP, at ``/mcp``.

Every request needs the bearer token, as ``lmc serve``'s API does (the same
:class:`~lmc_runtime.web.auth.Authenticator`: Origin and, without a
token, Host checks too). Each MCP session gets a workspace of its own; a
``DELETE`` that ends the session closes it, and a client whose connection
drops while a call runs has that call cancelled, which stops its code.

It runs the hardened set-up every HTTP door shares
(:mod:`lmc_runtime.web.hardened`): a deadline for a request's headers and
body, a cap on connections within the open-file limit, and failed accepts
logged rarely, so half-sent requests cannot hold every descriptor.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
from collections.abc import AsyncIterator

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ServiceError, TokenRejected
from ..web.auth import Authenticator
from ..web.connections import ConnectionLimits
from ..web.hardened import HardenedServer, backlog, hardened_config
from ..web.sockets import listen as listen_on
from ..web.sockets import url_of as base_url
from .pool import Workspaces
from .server import Context, build_server
from .workspace import Opener

__all__ = ["MCP_PATH", "HttpCaller", "McpGuard", "create_app", "listen", "serve_http"]

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
#: Where the guard leaves, in a request's ``scope["state"]``, the event set when its client goes.
GONE = "lmc.client_gone"
#: How long an MCP session (and its workspace) lives with no request at all.
SESSION_IDLE_SECONDS = 30 * 60
#: On SIGINT or SIGTERM, how long open connections (a client's event stream) may stay.
SHUTDOWN_GRACE = 5


def _headers(scope: Scope) -> dict[str, str]:
    return {
        key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]
    }


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json")]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class McpGuard:
    """Checks the token, counts each session's requests in flight, notices a
    client that goes away before its answer, and closes a deleted session's
    workspace."""

    def __init__(self, app: ASGIApp, auth: Authenticator, workspaces: Workspaces) -> None:
        self.app = app
        self.auth = auth
        self.workspaces = workspaces

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        try:
            self.auth.check_http(headers)
        except TokenRejected as exc:
            await _refuse(send, 401, "unauthorized", exc.message)
            return
        except ServiceError as exc:
            await _refuse(send, 403, "forbidden", exc.message)
            return
        gone = anyio.Event()
        scope.setdefault("state", {})[GONE] = gone
        answered = False
        status = 0

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect" and not answered:
                gone.set()
            return message

        async def sending(message: Message) -> None:
            nonlocal answered, status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                answered = True
            await send(message)

        session = headers.get(SESSION_HEADER)
        held = self.workspaces.hold(session) if session else contextlib.nullcontext()
        with held:
            await self.app(scope, receiving, sending)
        if session and scope["method"] == "DELETE" and 200 <= status < 300:
            self.workspaces.end(session)


class HttpCaller:
    """A call's session is its ``Mcp-Session-Id``; the guard says when its client goes."""

    def session(self, ctx: Context) -> str | None:
        request = ctx.request
        headers = getattr(request, "headers", None)
        return headers.get(SESSION_HEADER) if headers is not None else None

    def gone(self, ctx: Context) -> anyio.Event | None:
        scope = getattr(ctx.request, "scope", None)
        state = scope.get("state") if isinstance(scope, dict) else None
        event = state.get(GONE) if isinstance(state, dict) else None
        return event if isinstance(event, anyio.Event) else None


def create_app(
    opener: Opener, auth: Authenticator, *, max_sessions: int, announce: str | None = None
) -> Starlette:
    """The ASGI application: the MCP endpoint at ``/mcp`` behind the guard, with
    at most ``max_sessions`` MCP sessions (a new one past that: 503).
    ``announce`` is printed once it serves."""
    workspaces = Workspaces(opener, idle_timeout=SESSION_IDLE_SECONDS + 60)
    manager = StreamableHTTPSessionManager(
        build_server(workspaces, HttpCaller()),
        session_idle_timeout=SESSION_IDLE_SECONDS,
        max_sessions=max_sessions,
    )
    guard = McpGuard(StreamableHTTPASGIApp(manager), auth, workspaces)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with workspaces.running(), manager.run():
            if announce is not None:
                sys.stdout.write(announce + "\n")
                sys.stdout.flush()
            yield

    return Starlette(routes=[Route(MCP_PATH, endpoint=guard)], lifespan=lifespan)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket of ``host``:``port``, its backlog within the cap of
    the connection limits (``ListenError`` if it cannot be)."""
    return listen_on(host, port, backlog(ConnectionLimits()))


def url_of(sock: socket.socket) -> str:
    """``http://HOST:PORT/mcp`` of a listening socket (its real port)."""
    return f"{base_url(sock)}{MCP_PATH}"


def serve_http(
    opener: Opener,
    auth: Authenticator,
    sock: socket.socket,
    *,
    max_sessions: int,
    limits: ConnectionLimits | None = None,
) -> None:
    """Serve on ``sock`` until SIGINT or SIGTERM; then close every workspace
    (connections still open get :data:`SHUTDOWN_GRACE` seconds first). Connections
    have the deadlines and the cap of ``limits`` (the defaults of ``lmc serve``)."""
    announce = f"lmc mcp: listening on {url_of(sock)}"
    app = create_app(opener, auth, max_sessions=max_sessions, announce=announce)
    config = hardened_config(
        app,
        limits or ConnectionLimits(),
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
    )
    HardenedServer(config).run(sockets=[sock])
