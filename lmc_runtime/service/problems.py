"""API errors, rendered as ``{"error": {"code", "message"}}``.

The service raises the exceptions of :mod:`lmc_runtime.errors` (a
:class:`~lmc_runtime.errors.ServiceError`, most of them in
:mod:`lmc_runtime.service.errors`, for what it refuses on purpose). They
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
from starlette.types import Message, Receive, Scope, Send

from .. import errors
from ..error_codes import ErrorCode
from ..sandbox import fileops
from ..web.bodies import invalid_http_body
from ..web.scoped import ScopedMiddleware
from . import errors as refusals
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
    code: ErrorCode
    message: str


def error_response(status: int, code: ErrorCode, message: str) -> JSONResponse:
    """The JSON error body with ``status``."""
    body = ErrorBody(error=ErrorDetail(code=code, message=message))
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


_CODES: dict[int, ErrorCode] = {
    400: ErrorCode.BAD_REQUEST,
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    408: ErrorCode.REQUEST_TIMEOUT,
    409: ErrorCode.BUSY,
    410: ErrorCode.SESSION_LOST,
    413: ErrorCode.TOO_LARGE,
    429: ErrorCode.TOO_MANY_SESSIONS,
    503: ErrorCode.UNAVAILABLE,
}

#: The HTTP status each code is answered with, whatever raised it.
_STATUS: dict[ErrorCode, int] = {
    ErrorCode.BAD_REQUEST: 400,
    ErrorCode.MALFORMED: 400,
    ErrorCode.TOO_LARGE: 413,
    ErrorCode.CLIENT_DISCONNECTED: 400,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NETWORK_NOT_ALLOWED: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.SESSION_ENDED: 404,
    ErrorCode.SESSION_LOST: 410,
    ErrorCode.SESSION_FAILED: 503,
    ErrorCode.BUSY: 409,
    ErrorCode.CONFLICT: 409,
    ErrorCode.TOO_MANY_SESSIONS: 429,
    ErrorCode.LIMIT_TOO_HIGH: 400,
    ErrorCode.CHECKPOINT_NOT_FOUND: 404,
    ErrorCode.CHECKPOINT_GONE: 410,
    ErrorCode.TOO_MANY_CHECKPOINTS: 429,
    ErrorCode.CHECKPOINT_MEMORY: 413,
    ErrorCode.CHECKPOINTS_UNSUPPORTED: 400,
    ErrorCode.UNKNOWN_LANGUAGE: 400,
    ErrorCode.LANGUAGE_UNAVAILABLE: 400,
    ErrorCode.UNKNOWN_ENVIRONMENT: 400,
    ErrorCode.ENVIRONMENT_BROKEN: 400,
    ErrorCode.KERNEL_START_FAILED: 409,
    ErrorCode.KERNEL_DIED: 409,
    ErrorCode.BACKEND_ERROR: 409,
    ErrorCode.SANDBOX_UNAVAILABLE: 503,
    ErrorCode.SANDBOX_ERROR: 409,
    ErrorCode.BAD_PATH: 400,
    ErrorCode.UNSAFE_PATH: 400,
    ErrorCode.FILE_NOT_FOUND: 404,
    ErrorCode.FILE_EXISTS: 409,
    ErrorCode.NOT_A_REGULAR_FILE: 400,
    ErrorCode.IS_A_DIRECTORY: 400,
    ErrorCode.NOT_A_DIRECTORY: 400,
    ErrorCode.DIRECTORY_NOT_EMPTY: 409,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.SHUTTING_DOWN: 503,
    ErrorCode.STORE_UNAVAILABLE: 503,
    ErrorCode.IO_ERROR: 503,
}

#: Exception classes and what they answer: a code (and its :data:`_STATUS`), and a
#: summary that the exception's first line follows, or None where the exception's
#: own sentence is the whole message (the service's refusals). The most derived
#: class listed wins.
_MAPPED: dict[type[Exception], tuple[ErrorCode, str | None]] = {
    refusals.SessionNotFound: (ErrorCode.NOT_FOUND, None),
    refusals.SessionEnded: (ErrorCode.SESSION_ENDED, None),
    refusals.SessionLost: (ErrorCode.SESSION_LOST, None),
    refusals.SessionBusy: (ErrorCode.BUSY, None),
    refusals.SessionStartFailed: (ErrorCode.SESSION_FAILED, None),
    refusals.CapacityExceeded: (ErrorCode.TOO_MANY_SESSIONS, None),
    refusals.LimitTooHigh: (ErrorCode.LIMIT_TOO_HIGH, None),
    refusals.CheckpointUnknown: (ErrorCode.CHECKPOINT_NOT_FOUND, None),
    refusals.CheckpointGone: (ErrorCode.CHECKPOINT_GONE, None),
    refusals.TooManyCheckpoints: (ErrorCode.TOO_MANY_CHECKPOINTS, None),
    refusals.CheckpointMemory: (ErrorCode.CHECKPOINT_MEMORY, None),
    errors.CheckpointsUnsupported: (ErrorCode.CHECKPOINTS_UNSUPPORTED, None),
    errors.CheckpointNotFound: (ErrorCode.CHECKPOINT_GONE, None),
    refusals.NetworkNotAllowed: (ErrorCode.NETWORK_NOT_ALLOWED, None),
    refusals.BadNetworkPolicy: (ErrorCode.BAD_REQUEST, None),
    refusals.UnknownLanguage: (ErrorCode.UNKNOWN_LANGUAGE, None),
    refusals.LanguageUnavailable: (ErrorCode.LANGUAGE_UNAVAILABLE, None),
    refusals.UnknownEnvironment: (ErrorCode.UNKNOWN_ENVIRONMENT, None),
    refusals.EnvironmentBroken: (ErrorCode.ENVIRONMENT_BROKEN, None),
    refusals.ShuttingDown: (ErrorCode.SHUTTING_DOWN, None),
    refusals.ServiceUnavailable: (ErrorCode.UNAVAILABLE, None),
    refusals.InvalidRequest: (ErrorCode.BAD_REQUEST, None),
    refusals.MalformedRequest: (ErrorCode.MALFORMED, None),
    refusals.RequestTooLarge: (ErrorCode.TOO_LARGE, None),
    errors.TokenRejected: (ErrorCode.UNAUTHORIZED, None),
    errors.OriginNotAllowed: (ErrorCode.FORBIDDEN, None),
    errors.HostNotAllowed: (ErrorCode.FORBIDDEN, None),
    refusals.BadPath: (ErrorCode.BAD_PATH, None),
    refusals.SessionFileNotFound: (ErrorCode.FILE_NOT_FOUND, None),
    refusals.NotARegularFile: (ErrorCode.NOT_A_REGULAR_FILE, None),
    refusals.PathIsDirectory: (ErrorCode.IS_A_DIRECTORY, None),
    refusals.PathRefused: (ErrorCode.UNSAFE_PATH, None),
    refusals.DiskLimitExceeded: (ErrorCode.TOO_LARGE, None),
    refusals.FileExists: (ErrorCode.FILE_EXISTS, None),
    refusals.DirectoryNotEmpty: (ErrorCode.DIRECTORY_NOT_EMPTY, None),
    refusals.PathNotDirectory: (ErrorCode.NOT_A_DIRECTORY, None),
    fileops.BadDestination: (ErrorCode.BAD_PATH, None),
    fileops.NoSuchFile: (ErrorCode.FILE_NOT_FOUND, None),
    fileops.IsADirectory: (ErrorCode.IS_A_DIRECTORY, None),
    fileops.Refused: (ErrorCode.UNSAFE_PATH, None),
    fileops.AlreadyExists: (ErrorCode.FILE_EXISTS, None),
    fileops.NotEmpty: (ErrorCode.DIRECTORY_NOT_EMPTY, None),
    fileops.NotADirectory: (ErrorCode.NOT_A_DIRECTORY, None),
    fileops.FileOpError: (ErrorCode.BAD_REQUEST, None),
    errors.ServiceError: (ErrorCode.BAD_REQUEST, None),
    ClientDisconnect: (ErrorCode.CLIENT_DISCONNECTED, "the client left before the request ended"),
    errors.MessageError: (ErrorCode.MALFORMED, "the message is malformed"),
    errors.UnsafePath: (ErrorCode.UNSAFE_PATH, "the path is not allowed"),
    errors.InvalidThreadId: (ErrorCode.BAD_REQUEST, "invalid thread id"),
    errors.ThreadNotFound: (ErrorCode.NOT_FOUND, "no such thread"),
    errors.ThreadExists: (ErrorCode.CONFLICT, "the thread already exists"),
    errors.StoreError: (ErrorCode.STORE_UNAVAILABLE, "the transcript store failed"),
    errors.UsageError: (ErrorCode.CONFLICT, "the session cannot do that now"),
    errors.BackendUnavailable: (ErrorCode.LANGUAGE_UNAVAILABLE, "the language is not available"),
    errors.KernelStartError: (ErrorCode.KERNEL_START_FAILED, "the interpreter could not start"),
    errors.KernelDied: (ErrorCode.KERNEL_DIED, "the interpreter ended unexpectedly"),
    errors.BackendError: (ErrorCode.BACKEND_ERROR, "the interpreter failed"),
    errors.SandboxUnavailable: (ErrorCode.SANDBOX_UNAVAILABLE, "the sandbox cannot run here"),
    errors.SandboxError: (ErrorCode.SANDBOX_ERROR, "the session's sandbox failed"),
    errors.LMCError: (ErrorCode.BAD_REQUEST, "the request cannot be done"),
    FileNotFoundError: (ErrorCode.FILE_NOT_FOUND, "no such file"),
    IsADirectoryError: (ErrorCode.IS_A_DIRECTORY, "the path is a directory"),
    NotADirectoryError: (ErrorCode.NOT_A_DIRECTORY, "a path component is not a directory"),
    PermissionError: (ErrorCode.FORBIDDEN, "permission denied"),
    OSError: (ErrorCode.IO_ERROR, "the service could not do its part"),
    # The validation the dataclasses do themselves (limits below the minimums...).
    ValueError: (ErrorCode.BAD_REQUEST, "invalid value"),
}

_ERRNO_MAPPED: dict[int, tuple[ErrorCode, str]] = {
    errno.ENAMETOOLONG: (ErrorCode.BAD_PATH, "the path is too long"),
    errno.ELOOP: (ErrorCode.UNSAFE_PATH, "the path goes through a symbolic link"),
    errno.EFBIG: (ErrorCode.TOO_LARGE, "the file does not fit the session's limits"),
    errno.ENOSPC: (ErrorCode.TOO_LARGE, "the session's disk is full"),
    errno.EDQUOT: (ErrorCode.TOO_LARGE, "the session's disk quota is used up"),
}


def problem_for(exc: BaseException) -> Problem | None:
    """The :class:`Problem` ``exc`` stands for, or None for an unforeseen one."""
    if isinstance(exc, OSError) and exc.errno in _ERRNO_MAPPED:
        code, message = _ERRNO_MAPPED[exc.errno]
        return Problem(_STATUS[code], code, message)
    if isinstance(exc, ValidationError):
        return Problem(400, ErrorCode.BAD_REQUEST, validation_text(exc))
    for cls in type(exc).__mro__:
        if cls in _MAPPED:
            code, summary = _MAPPED[cls]
            status = _STATUS[code]
            if summary is None:
                return Problem(status, code, str(exc))
            # One line of it: a kernel's start-up output or a host path stays in the log.
            detail = (exc.strerror if isinstance(exc, OSError) else str(exc)) or ""
            detail = detail.strip().split("\n", 1)[0][:300].rstrip(":")
            return Problem(status, code, f"{summary}: {detail}" if detail else summary)
    return None


def _where(connection: HTTPConnection) -> str:
    return f"{connection.scope.get('method', 'WEBSOCKET')} {connection.url.path}"


class LastResort(ScopedMiddleware):
    """ASGI middleware: an exception nothing else mapped is logged with its
    traceback and answered with a JSON 500 that carries none."""

    handles = "http"

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
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
            response = error_response(500, ErrorCode.INTERNAL, "internal error; see the server log")
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
        return error_response(
            400, ErrorCode.BAD_REQUEST, invalid_fields(exc.errors(), located=True)
        )

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _CODES.get(exc.status_code, ErrorCode.ERROR)
        return error_response(exc.status_code, code, str(exc.detail))

    for cls in _MAPPED:
        app.add_exception_handler(cls, on_mapped)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_middleware(LastResort)
