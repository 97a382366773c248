"""API errors, rendered as ``{"error": {"code", "message"}}``.

The service raises the exceptions of :mod:`lmc_runtime.errors` (a
:class:`~lmc_runtime.errors.ServiceError` for what it refuses on purpose). They
are mapped here to a :class:`Problem`, by their class, in one table
(:data:`_MAPPED`): a bad request is a 4xx, a service that cannot do its part is
a 503, and only an exception nobody foresaw is a 500, whose traceback goes to
the log and never to the client.
"""

from __future__ import annotations

import errno
import logging
from typing import NamedTuple

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect, HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import errors
from ..sandbox import fileops
from ..web.bodies import invalid_http_body
from .models import ErrorBody, ErrorDetail
from .wording import invalid_fields, validation_text

__all__ = [
    "LastResort",
    "Problem",
    "error_response",
    "install_handlers",
    "invalid_http_body",
    "problem_for",
]

logger = logging.getLogger(__name__)


class Problem(NamedTuple):
    """What a client is told of an error: an HTTP status, a code and a clear sentence."""

    status: int
    code: str
    message: str


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
    410: "session_lost",
    413: "too_large",
    429: "too_many_sessions",
    503: "unavailable",
}

#: Exception classes and what they answer: status, code, and a summary that the
#: exception's first line follows, or None where the exception's own sentence is
#: the whole message (the service's refusals). The most derived class listed wins.
_MAPPED: dict[type[Exception], tuple[int, str, str | None]] = {
    errors.SessionNotFound: (404, "not_found", None),
    errors.SessionEnded: (404, "session_ended", None),
    errors.SessionLost: (410, "session_lost", None),
    errors.SessionBusy: (409, "busy", None),
    errors.SessionStartFailed: (503, "session_failed", None),
    errors.CapacityExceeded: (429, "too_many_sessions", None),
    errors.LimitTooHigh: (400, "limit_too_high", None),
    errors.NetworkNotAllowed: (403, "network_not_allowed", None),
    errors.UnknownLanguage: (400, "unknown_language", None),
    errors.LanguageUnavailable: (400, "language_unavailable", None),
    errors.ShuttingDown: (503, "shutting_down", None),
    errors.ServiceUnavailable: (503, "unavailable", None),
    errors.InvalidRequest: (400, "bad_request", None),
    errors.MalformedRequest: (400, "malformed", None),
    errors.RequestTooLarge: (413, "too_large", None),
    errors.TokenRejected: (401, "unauthorized", None),
    errors.OriginNotAllowed: (403, "forbidden", None),
    errors.HostNotAllowed: (403, "forbidden", None),
    errors.BadPath: (400, "bad_path", None),
    errors.SessionFileNotFound: (404, "file_not_found", None),
    errors.NotARegularFile: (400, "not_a_regular_file", None),
    errors.PathIsDirectory: (400, "is_a_directory", None),
    errors.PathRefused: (400, "unsafe_path", None),
    errors.DiskLimitExceeded: (413, "too_large", None),
    errors.FileExists: (409, "file_exists", None),
    errors.DirectoryNotEmpty: (409, "directory_not_empty", None),
    errors.PathNotDirectory: (400, "not_a_directory", None),
    fileops.BadDestination: (400, "bad_path", None),
    fileops.NoSuchFile: (404, "file_not_found", None),
    fileops.IsADirectory: (400, "is_a_directory", None),
    fileops.Refused: (400, "unsafe_path", None),
    fileops.AlreadyExists: (409, "file_exists", None),
    fileops.NotEmpty: (409, "directory_not_empty", None),
    fileops.NotADirectory: (400, "not_a_directory", None),
    fileops.FileOpError: (400, "bad_request", None),
    errors.ServiceError: (400, "bad_request", None),
    ClientDisconnect: (400, "client_disconnected", "the client left before the request ended"),
    errors.MessageError: (400, "malformed", "the message is malformed"),
    errors.UnsafePath: (400, "unsafe_path", "the path is not allowed"),
    errors.InvalidThreadId: (400, "bad_request", "invalid thread id"),
    errors.ThreadNotFound: (404, "not_found", "no such thread"),
    errors.ThreadExists: (409, "conflict", "the thread already exists"),
    errors.StoreError: (503, "store_unavailable", "the transcript store failed"),
    errors.UsageError: (409, "conflict", "the session cannot do that now"),
    errors.BackendUnavailable: (400, "language_unavailable", "the language is not available"),
    errors.KernelStartError: (409, "kernel_start_failed", "the interpreter could not start"),
    errors.KernelDied: (409, "kernel_died", "the interpreter ended unexpectedly"),
    errors.BackendError: (409, "backend_error", "the interpreter failed"),
    errors.SandboxUnavailable: (503, "sandbox_unavailable", "the sandbox cannot run here"),
    errors.SandboxError: (409, "sandbox_error", "the session's sandbox failed"),
    errors.LMCError: (400, "bad_request", "the request cannot be done"),
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


def problem_for(exc: BaseException) -> Problem | None:
    """The :class:`Problem` ``exc`` stands for, or None for an unforeseen one."""
    if isinstance(exc, OSError) and exc.errno in _ERRNO_MAPPED:
        return Problem(*_ERRNO_MAPPED[exc.errno])
    if isinstance(exc, ValidationError):
        return Problem(400, "bad_request", validation_text(exc))
    for cls in type(exc).__mro__:
        if cls in _MAPPED:
            status, code, summary = _MAPPED[cls]
            if summary is None:
                return Problem(status, code, str(exc))
            # One line of it: a kernel's start-up output or a host path stays in the log.
            detail = (exc.strerror if isinstance(exc, OSError) else str(exc)) or ""
            detail = detail.strip().split("\n", 1)[0][:300].rstrip(":")
            return Problem(status, code, f"{summary}: {detail}" if detail else summary)
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
        problem = problem_for(exc)
        assert problem is not None
        if isinstance(exc, ClientDisconnect):
            logger.debug("the client left during %s", _where(request))
        elif not isinstance(exc, errors.ServiceError):
            logger.info("%s: %d %s: %r", _where(request), problem.status, problem.code, exc)
        return error_response(problem.status, problem.code, problem.message)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(400, "bad_request", invalid_fields(exc.errors(), located=True))

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _CODES.get(exc.status_code, "error")
        return error_response(exc.status_code, code, str(exc.detail))

    for cls in _MAPPED:
        app.add_exception_handler(cls, on_mapped)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_middleware(LastResort)
