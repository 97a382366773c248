"""Error bodies of ``lmc serve`` as typed exceptions, and broken connections as
:class:`~lmc_runtime.errors.ConnectionLost`."""

from __future__ import annotations

import json
from typing import Any

from .. import errors

__all__ = ["USER_ERRORS", "error_from", "error_from_body", "parse_error"]

#: Error codes and the exception each one raises; any other code raises by status.
_BY_CODE: dict[str, type[errors.RemoteError]] = {
    "unauthorized": errors.RemoteUnauthorized,
    "forbidden": errors.RemoteUnauthorized,
    "not_found": errors.RemoteSessionNotFound,
    "session_ended": errors.RemoteSessionEnded,
    "session_lost": errors.RemoteSessionLost,
    "busy": errors.RemoteBusy,
    "too_many_sessions": errors.RemoteCapacityExceeded,
    "bad_path": errors.RemotePathError,
    "unsafe_path": errors.RemotePathError,
    "not_a_regular_file": errors.RemotePathError,
    "is_a_directory": errors.RemotePathError,
    "not_a_directory": errors.RemotePathError,
    "file_not_found": errors.RemoteFileNotFound,
    "file_exists": errors.RemoteFileExists,
    "directory_not_empty": errors.RemoteFileExists,
    "too_large": errors.RemoteTooLarge,
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
USER_ERRORS = frozenset({"malformed", "unknown_language", "language_unavailable"})


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
        return "error", f"HTTP {status}" + (f": {text}" if text else "")


def error_from_body(status: int, body: bytes) -> errors.RemoteError:
    """The exception an error response with ``status`` and ``body`` stands for."""
    return error_from(status, *parse_error(status, body))
