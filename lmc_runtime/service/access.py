"""The access log: one line per HTTP request and per WebSocket connection.

:class:`AccessLog` wraps the application: when a request has been answered
(or a WebSocket connection has ended) it logs, on ``lmc_runtime.access``, the
method, the path (its query with any ``token=`` redacted, and an E2B sandbox
id shortened: it is a bearer capability), the status, the
duration in milliseconds and the client's address. A WebSocket's status is
101 once accepted, else the status it was refused with (403 when closed
before being accepted).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .logs import hide_sandbox_ids, redact_query

__all__ = ["AccessLog"]

logger = logging.getLogger("lmc_runtime.access")


@dataclass
class _Seen:
    """What the application answered."""

    status: int | None = None
    started: float = field(default_factory=time.monotonic)

    def see(self, message: Message) -> None:
        kind = message["type"]
        if kind in ("http.response.start", "websocket.http.response.start"):
            self.status = int(message["status"])
        elif kind == "websocket.accept":
            self.status = 101
        elif kind == "websocket.close" and self.status is None:
            self.status = 403


def _target(scope: Scope) -> str:
    path = hide_sandbox_ids(str(scope.get("path", "")))
    query = scope.get("query_string", b"")
    if query:
        path += "?" + redact_query(query.decode("latin-1"))
    return path


def _client(scope: Scope) -> str:
    client = scope.get("client")
    if not client:
        return "-"
    host, port = client
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


class AccessLog:
    """An ASGI middleware writing the access log of ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        seen = _Seen()

        async def watched(message: Message) -> None:
            seen.see(message)
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            self._log(scope, seen)

    @staticmethod
    def _log(scope: Scope, seen: _Seen) -> None:
        if not logger.isEnabledFor(logging.INFO):
            return
        method = "WS" if scope["type"] == "websocket" else str(scope.get("method", "-"))
        status = seen.status if seen.status is not None else 500
        fields: dict[str, Any] = {
            "method": method,
            "path": _target(scope),
            "status": status,
            "duration_ms": round((time.monotonic() - seen.started) * 1000, 1),
            "client": _client(scope),
        }
        logger.info(
            '%s "%s %s" %d %.1f ms',
            fields["client"],
            method,
            fields["path"],
            status,
            fields["duration_ms"],
            extra=fields,
        )
