"""E2B's code interpreter for each sandbox: ``POST /execute`` streamed as lines
of JSON, and its contexts (``/contexts``)."""

from __future__ import annotations

from fastapi import FastAPI, Response

from ..door import Door
from ..errors import install_e2b_handlers

__all__ = ["interpreter_app"]


def interpreter_app(door: Door) -> FastAPI:
    """The code interpreter of every sandbox of ``door``."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    install_e2b_handlers(app)

    @app.get("/health")
    async def health() -> Response:
        return Response(status_code=200)

    return app
