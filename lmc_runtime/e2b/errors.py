"""The refusals of the E2B door, and how every error there is answered: E2B's
shape, ``{"code": <status>, "message": "..."}``, which its SDKs turn into their
own exceptions (404 into ``NotFoundException``, 401 into
``AuthenticationException``, 502 from sandbox traffic into "the sandbox timed
out or was not found", ...).

What the lmc API refuses is refused here too, with the same status and sentence
(:func:`~lmc_runtime.service.problems.problem_for`): the two doors lead into the
same sessions.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse

from ..errors import LMCError, TokenRejected
from ..service.logs import hide_sandbox_ids
from ..service.problems import problem_for
from ..service.wording import invalid_fields

__all__ = [
    "E2BError",
    "NotImplementedInLmc",
    "SandboxGone",
    "SandboxNotFound",
    "e2b_response",
    "install_e2b_handlers",
]

logger = logging.getLogger(__name__)


class E2BError(LMCError):
    """A refusal of the E2B door, with the HTTP status it is answered with."""

    status = 400

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class SandboxNotFound(E2BError):
    """No live sandbox has this id (it never had, it was killed or it timed out)."""

    status = 404

    def __init__(self, shown_id: str) -> None:
        super().__init__(f"sandbox {shown_id} was not found: it was killed, timed out or never was")


class SandboxGone(E2BError):
    """Sandbox traffic for a sandbox that is not running: E2B's proxy answers 502."""

    status = 502

    def __init__(self, shown_id: str, why: str = "was not found or has ended") -> None:
        super().__init__(f"the sandbox {shown_id} {why} (it may have timed out)")


class NotImplementedInLmc(E2BError):
    """A feature of E2B's cloud that lmc-runtime does not have (501)."""

    status = 501

    def __init__(self, feature: str, why: str) -> None:
        super().__init__(f"{feature} is not supported by this server (lmc-runtime): {why}")


def e2b_response(status: int, message: str) -> JSONResponse:
    """E2B's error body."""
    return JSONResponse({"code": status, "message": message}, status_code=status)


def _short_locations(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """``errors`` with each part of their locations cut to 40 characters: a key of
    the client's (metadata, envVars) is part of one, and a refusal must not
    send a huge one back."""
    return [
        {
            **error,
            "loc": tuple(
                f"{part[:40]}\u2026" if isinstance(part, str) and len(part) > 40 else part
                for part in error.get("loc", ())
            ),
        }
        for error in errors
    ]


def install_e2b_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` in E2B's shape, with the right status."""

    async def on_e2b(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, E2BError)
        return e2b_response(exc.status, exc.message)

    async def on_lmc(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, TokenRejected):
            return e2b_response(401, f"invalid API key: {exc}")
        problem = problem_for(exc)
        if problem is None:
            path = hide_sandbox_ids(request.url.path)
            logger.error("internal error on %s", path, exc_info=exc)
            return e2b_response(500, "internal error; see the server log")
        return e2b_response(problem.status, problem.message)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return e2b_response(400, invalid_fields(_short_locations(exc.errors()), located=True))

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return e2b_response(exc.status_code, str(exc.detail))

    app.add_exception_handler(E2BError, on_e2b)
    app.add_exception_handler(LMCError, on_lmc)
    app.add_exception_handler(OSError, on_lmc)
    # A model built from what the client sent (a session's request) refused it.
    app.add_exception_handler(ValidationError, on_lmc)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
