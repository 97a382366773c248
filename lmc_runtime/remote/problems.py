"""Error bodies of ``lmc serve`` as typed exceptions, and broken connections as
:class:`~lmc_runtime.errors.ConnectionLost`."""

from __future__ import annotations

import json
from typing import Any

from ..errors import (
    RemoteBusy,
    RemoteCapacityExceeded,
    RemoteError,
    RemoteFileExists,
    RemoteFileNotFound,
    RemotePathError,
    RemoteSessionEnded,
    RemoteSessionLost,
    RemoteSessionNotFound,
    RemoteTooLarge,
    RemoteUnauthorized,
    RemoteUnavailable,
)

__all__ = ["USER_ERRORS", "error_from", "error_from_body", "parse_error"]

#: Error codes and the exception each one raises; any other code raises by status.
_BY_CODE: dict[str, type[RemoteError]] = {
    "unauthorized": RemoteUnauthorized,
    "forbidden": RemoteUnauthorized,
    "not_found": RemoteSessionNotFound,
    "session_ended": RemoteSessionEnded,
    "session_lost": RemoteSessionLost,
    "busy": RemoteBusy,
    "too_many_sessions": RemoteCapacityExceeded,
    "bad_path": RemotePathError,
    "unsafe_path": RemotePathError,
    "not_a_regular_file": RemotePathError,
    "is_a_directory": RemotePathError,
    "not_a_directory": RemotePathError,
    "file_not_found": RemoteFileNotFound,
    "file_exists": RemoteFileExists,
    "directory_not_empty": RemoteFileExists,
    "too_large": RemoteTooLarge,
}
_BY_STATUS: dict[int, type[RemoteError]] = {
    401: RemoteUnauthorized,
    404: RemoteSessionNotFound,
    409: RemoteBusy,
    410: RemoteSessionLost,
    413: RemoteTooLarge,
    429: RemoteCapacityExceeded,
    503: RemoteUnavailable,
}

#: Refusals of an execution that are the user's doing, answered with a
#: not-understood message (as ``Computer`` does) instead of raised.
USER_ERRORS = frozenset({"malformed", "unknown_language", "language_unavailable"})


def error_from(status: int, code: str, message: str) -> RemoteError:
    """The exception for an error ``status`` with ``code`` and ``message``."""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or RemoteError
    return cls(message, status=status, code=code)


def parse_error(status: int, body: bytes) -> tuple[str, str]:
    """The ``code`` and ``message`` of an error body (made up if it is not one)."""
    try:
        detail: Any = json.loads(body)["error"]
        return str(detail["code"]), str(detail["message"])
    except (ValueError, KeyError, TypeError):
        text = body.decode("utf-8", "replace").strip()[:300]
        return "error", f"HTTP {status}" + (f": {text}" if text else "")


def error_from_body(status: int, body: bytes) -> RemoteError:
    """The exception an error response with ``status`` and ``body`` stands for."""
    return error_from(status, *parse_error(status, body))
