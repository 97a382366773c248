"""API errors: one exception type, rendered as ``{"error": {"code", "message"}}``."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .models import ErrorBody, ErrorDetail

__all__ = ["ApiError", "error_response", "install_handlers"]

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
    409: "busy",
    413: "too_large",
    429: "too_many_sessions",
    503: "unavailable",
}


def install_handlers(app: FastAPI) -> None:
    """Render every error of ``app`` as JSON with the right status."""

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.code, exc.message)

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

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("internal error on %s %s", request.method, request.url.path)
        return error_response(500, "internal", f"internal error: {exc!r}")

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)
