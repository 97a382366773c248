"""Error bodies of ``lmc serve`` as typed exceptions, and broken connections as
:class:`~lmc_runtime.errors.ConnectionLost`."""

from __future__ import annotations

import json
from typing import Any

from .. import errors
from ..error_codes import ErrorCode

__all__ = ["BY_STATUS", "USER_ERRORS", "error_from", "error_from_body", "parse_error"]

#: Error codes and the exception each one raises; any other code raises by status.
_BY_CODE: dict[str, type[errors.RemoteError]] = {
    ErrorCode.UNAUTHORIZED: errors.RemoteUnauthorized,
    ErrorCode.FORBIDDEN: errors.RemoteUnauthorized,
    ErrorCode.NOT_FOUND: errors.RemoteSessionNotFound,
    ErrorCode.SESSION_ENDED: errors.RemoteSessionEnded,
    ErrorCode.SESSION_LOST: errors.RemoteSessionLost,
    ErrorCode.BUSY: errors.RemoteBusy,
    ErrorCode.TOO_MANY_SESSIONS: errors.RemoteCapacityExceeded,
    ErrorCode.BAD_PATH: errors.RemotePathError,
    ErrorCode.UNSAFE_PATH: errors.RemotePathError,
    ErrorCode.NOT_A_REGULAR_FILE: errors.RemotePathError,
    ErrorCode.IS_A_DIRECTORY: errors.RemotePathError,
    ErrorCode.NOT_A_DIRECTORY: errors.RemotePathError,
    ErrorCode.FILE_NOT_FOUND: errors.RemoteFileNotFound,
    ErrorCode.FILE_EXISTS: errors.RemoteFileExists,
    ErrorCode.DIRECTORY_NOT_EMPTY: errors.RemoteFileExists,
    ErrorCode.TOO_LARGE: errors.RemoteTooLarge,
    ErrorCode.CHECKPOINT_NOT_FOUND: errors.RemoteCheckpointNotFound,
    ErrorCode.CHECKPOINT_GONE: errors.RemoteCheckpointNotFound,
    ErrorCode.TOO_MANY_CHECKPOINTS: errors.RemoteCapacityExceeded,
    ErrorCode.CHECKPOINT_MEMORY: errors.RemoteTooLarge,
    ErrorCode.CHECKPOINTS_UNSUPPORTED: errors.RemoteCheckpointsUnsupported,
}
_BY_STATUS: dict[int, type[errors.RemoteError]] = {
    401: errors.RemoteUnauthorized,
    404: errors.RemoteSessionNotFound,
    409: errors.RemoteBusy,
    410: errors.RemoteSessionLost,
    413: errors.RemoteTooLarge,
    429: errors.RemoteCapacityExceeded,
    503: errors.RemoteUnavailable,
}

#: Refusals of an execution that are the user's doing, answered with a
#: not-understood message (as ``Computer`` does) instead of raised.
USER_ERRORS = frozenset(
    {ErrorCode.MALFORMED, ErrorCode.UNKNOWN_LANGUAGE, ErrorCode.LANGUAGE_UNAVAILABLE}
)

#: Codes the server answers that raise by their status alone, on purpose: their
#: status says all a caller can act on (a 400 is a plain :class:`RemoteError`).
BY_STATUS = frozenset(
    {
        ErrorCode.BAD_REQUEST,
        ErrorCode.METHOD_NOT_ALLOWED,
        ErrorCode.REQUEST_TIMEOUT,
        ErrorCode.CLIENT_DISCONNECTED,
        ErrorCode.TOO_MANY_CONNECTIONS,
        ErrorCode.NETWORK_NOT_ALLOWED,
        ErrorCode.UNKNOWN_ENVIRONMENT,
        ErrorCode.ENVIRONMENT_BROKEN,
        ErrorCode.SESSION_FAILED,
        ErrorCode.CONFLICT,
        ErrorCode.LIMIT_TOO_HIGH,
        ErrorCode.KERNEL_START_FAILED,
        ErrorCode.KERNEL_DIED,
        ErrorCode.BACKEND_ERROR,
        ErrorCode.SANDBOX_UNAVAILABLE,
        ErrorCode.SANDBOX_ERROR,
        ErrorCode.UNAVAILABLE,
        ErrorCode.SHUTTING_DOWN,
        ErrorCode.STORE_UNAVAILABLE,
        ErrorCode.IO_ERROR,
        ErrorCode.INTERNAL,
        ErrorCode.ERROR,
    }
)


def error_from(status: int, code: str, message: str) -> errors.RemoteError:
    """The exception for an error ``status`` with ``code`` and ``message``."""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or errors.RemoteError
    return cls(message, status=status, code=code)


def parse_error(status: int, body: bytes) -> tuple[str, str]:
    """The ``code`` and ``message`` of an error body (made up if it is not one)."""
    try:
        detail: Any = json.loads(body)["error"]
        return str(detail["code"]), str(detail["message"])
    except (ValueError, KeyError, TypeError):
        text = body.decode("utf-8", "replace").strip()[:300]
        return ErrorCode.ERROR, f"HTTP {status}" + (f": {text}" if text else "")


def error_from_body(status: int, body: bytes) -> errors.RemoteError:
    """The exception an error response with ``status`` and ``body`` stands for."""
    return error_from(status, *parse_error(status, body))
