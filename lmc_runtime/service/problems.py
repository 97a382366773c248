"""API errors, rendered as ``{"error": {"code", "message"}}``.

Routes raise :class:`ApiError` for what they refuse on purpose. Every other
exception is mapped here, by its class, in one table (:data:`_MAPPED`): a bad
request is a 4xx, a service that cannot do its part is a 503, and only an
exception nobody foresaw is a 500, whose traceback goes to the log and never
to the client.
"""

from __future__ import annotations

import errno
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect, HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import (
    BackendError,
    BackendUnavailable,
    InvalidThreadId,
    KernelDied,
    KernelStartError,
    LMCError,
    MessageError,
    SandboxError,
    SandboxUnavailable,
    StoreError,
    ThreadExists,
    ThreadNotFound,
    UnsafePath,
    UsageError,
)
from .models import ErrorBody, ErrorDetail

__all__ = ["ApiError", "LastResort", "api_error_for", "error_response", "install_handlers"]

logger = logging.getLogger(__name__)


class ApiError(Exception):
    """A request the service refuses, with its HTTP status and a clear sentence."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(status: int, code: str, message: str) -> JSONResponse:
    """The JSON error body with ``status``."""
    body = ErrorBody(error=ErrorDetail(code=code, message=message))
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    409: "busy",
    413: "too_large",
    429: "too_many_sessions",
    503: "unavailable",
}

#: Exception classes and what they answer; the most derived class listed wins.
_MAPPED: dict[type[Exception], tuple[int, str, str]] = {
    ClientDisconnect: (400, "client_disconnected", "the client left before the request ended"),
    MessageError: (400, "malformed", "the message is malformed"),
    UnsafePath: (400, "unsafe_path", "the path is not allowed"),
    InvalidThreadId: (400, "bad_request", "invalid thread id"),
    ThreadNotFound: (404, "not_found", "no such thread"),
    ThreadExists: (409, "conflict", "the thread already exists"),
    StoreError: (503, "store_unavailable", "the transcript store failed"),
    UsageError: (409, "conflict", "the session cannot do that now"),
    BackendUnavailable: (400, "language_unavailable", "the language is not available"),
    KernelStartError: (409, "kernel_start_failed", "the interpreter could not start"),
    KernelDied: (409, "kernel_died", "the interpreter ended unexpectedly"),
    BackendError: (409, "backend_error", "the interpreter failed"),
    SandboxUnavailable: (503, "sandbox_unavailable", "the sandbox cannot run here"),
    SandboxError: (409, "sandbox_error", "the session's sandbox failed"),
    LMCError: (400, "bad_request", "the request cannot be done"),
    FileNotFoundError: (404, "file_not_found", "no such file"),
    IsADirectoryError: (400, "is_a_directory", "the path is a directory"),
    NotADirectoryError: (400, "not_a_directory", "a path component is not a directory"),
    PermissionError: (403, "forbidden", "permission denied"),
    OSError: (503, "io_error", "the service could not do its part"),
    # The validation the dataclasses do themselves (limits below the minimums...).
    ValueError: (400, "bad_request", "invalid value"),
}

_ERRNO_MAPPED = {
    errno.ENAMETOOLONG: (400, "bad_path", "the path is too long"),
    errno.ELOOP: (400, "unsafe_path", "the path goes through a symbolic link"),
    errno.EFBIG: (413, "too_large", "the file does not fit the session's limits"),
    errno.ENOSPC: (413, "too_large", "the session's disk is full"),
    errno.EDQUOT: (413, "too_large", "the session's disk quota is used up"),
}


def api_error_for(exc: BaseException) -> ApiError | None:
    """The :class:`ApiError` ``exc`` stands for, or None for an unforeseen one."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, OSError) and exc.errno in _ERRNO_MAPPED:
        status, code, summary = _ERRNO_MAPPED[exc.errno]
        return ApiError(status, code, summary)
    for cls in type(exc).__mro__:
        if cls in _MAPPED:
            status, code, summary = _MAPPED[cls]
            # One line of it: a kernel's start-up output or a host path stays in the log.
            detail = (exc.strerror if isinstance(exc, OSError) else str(exc)) or ""
            detail = detail.strip().split("\n", 1)[0][:300].rstrip(":")
            return ApiError(status, code, f"{summary}: {detail}" if detail else summary)
    return None


def _where(connection: HTTPConnection) -> str:
    return f"{connection.scope.get('method', 'WEBSOCKET')} {connection.url.path}"


class LastResort:
    """ASGI middleware: an exception nothing else mapped is logged with its
    traceback and answered with a JSON 500 that carries none."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            logger.error("internal error on %s", _where(HTTPConnection(scope)), exc_info=exc)
            if started:
                raise
            response = error_response(500, "internal", "internal error; see the server log")
            await response(scope, receive, send)


def install_handlers(app: FastAPI) -> None:
    """Render every error of ``app`` as JSON with the right status."""

    async def on_mapped(request: Request, exc: Exception) -> JSONResponse:
        error = api_error_for(exc)
        assert error is not None
        if isinstance(exc, ClientDisconnect):
            logger.debug("the client left during %s", _where(request))
        elif not isinstance(exc, ApiError):
            logger.info("%s: %d %s: %r", _where(request), error.status, error.code, exc)
        return error_response(error.status, error.code, error.message)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        parts = []
        for error in exc.errors():
            loc = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
            parts.append(f"{loc}: {error.get('msg')}" if loc else str(error.get("msg")))
        return error_response(400, "bad_request", "; ".join(parts) or "invalid request")

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _CODES.get(exc.status_code, "error")
        return error_response(exc.status_code, code, str(exc.detail))

    app.add_exception_handler(ApiError, on_mapped)
    for cls in _MAPPED:
        app.add_exception_handler(cls, on_mapped)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_middleware(LastResort)
