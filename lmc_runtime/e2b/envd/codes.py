"""Connect's error codes, and how lmc's refusals become them, in one place.

A handler raises :class:`ConnectError`; anything else it raises is mapped by
:func:`connect_error_of`: the refusals of the lmc API (files, paths, limits,
sessions) keep their sentence and get the code of their HTTP status, so E2B's
SDKs raise what they raise for envd's own answers (``NotFoundException`` for
``not_found``, ``make_dir`` returning False on ``already_exists``, ...).
"""

from __future__ import annotations

import logging
from typing import Any

from ...sandbox import fileops
from ...service import errors as refusals
from ...service.problems import problem_for
from ..errors import E2BError

__all__ = ["HTTP_STATUS", "ConnectError", "connect_error_of"]

logger = logging.getLogger(__name__)

#: Connect's codes and the HTTP status a unary error is answered with.
HTTP_STATUS: dict[str, int] = {
    "canceled": 499,
    "unknown": 500,
    "invalid_argument": 400,
    "deadline_exceeded": 504,
    "not_found": 404,
    "already_exists": 409,
    "permission_denied": 403,
    "resource_exhausted": 429,
    "failed_precondition": 400,
    "aborted": 409,
    "out_of_range": 400,
    "unimplemented": 501,
    "internal": 500,
    "unavailable": 503,
    "data_loss": 500,
    "unauthenticated": 401,
}

#: The HTTP statuses of lmc's refusals and their Connect codes.
_BY_STATUS: dict[int, str] = {
    400: "invalid_argument",
    401: "unauthenticated",
    403: "permission_denied",
    404: "not_found",
    408: "deadline_exceeded",
    409: "failed_precondition",
    410: "not_found",
    413: "resource_exhausted",
    429: "resource_exhausted",
    501: "unimplemented",
    502: "unavailable",
    503: "unavailable",
}

#: Where the status alone says too little.
_BY_CLASS: dict[type[BaseException], str] = {
    fileops.AlreadyExists: "already_exists",
    refusals.FileExists: "already_exists",
    fileops.NotEmpty: "failed_precondition",
    refusals.DirectoryNotEmpty: "failed_precondition",
    FileExistsError: "already_exists",
}


class ConnectError(Exception):
    """An RPC's refusal: Connect's ``code`` (``not_found``, ...) and a sentence."""

    def __init__(self, code: str, message: str) -> None:
        if code not in HTTP_STATUS:
            raise ValueError(f"not a Connect error code: {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def status(self) -> int:
        return HTTP_STATUS[self.code]

    def wire(self) -> dict[str, Any]:
        """The error as Connect's JSON has it."""
        return {"code": self.code, "message": self.message}


def connect_error_of(exc: BaseException) -> ConnectError:
    """What the client is told of ``exc``, raised by a handler; an error nobody
    foresaw is logged with its traceback and told as ``internal``, without it."""
    if isinstance(exc, ConnectError):
        return exc
    if isinstance(exc, E2BError):
        return ConnectError(_BY_STATUS.get(exc.status, "unknown"), exc.message)
    for cls in type(exc).__mro__:
        if cls in _BY_CLASS:
            problem = problem_for(exc)
            return ConnectError(_BY_CLASS[cls], problem.message if problem else str(exc))
    problem = problem_for(exc)
    if problem is None or (problem.status >= 500 and problem.status not in _BY_STATUS):
        logger.error("envd: internal error", exc_info=exc)
        return ConnectError("internal", "internal error; see the server log")
    return ConnectError(_BY_STATUS.get(problem.status, "unknown"), problem.message)
