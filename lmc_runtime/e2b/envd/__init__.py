"""envd, the in-sandbox daemon of E2B's SDKs, served by the host for each
sandbox: its health check, files over HTTP, and the Connect RPC services
``filesystem.Filesystem`` and ``process.Process``."""

from __future__ import annotations

from fastapi import FastAPI, Response
from starlette.routing import Route

from ..door import Door
from ..errors import install_e2b_handlers
from .drain import answered_after_body
from .files import download, upload
from .filesystem import filesystem_service
from .process_service import process_routes

__all__ = ["envd_app"]


def envd_app(door: Door) -> FastAPI:
    """The envd of every sandbox of ``door`` (the router puts the sandbox in the scope)."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    install_e2b_handlers(app)

    @app.get("/health", status_code=204)
    async def health() -> Response:
        return Response(status_code=204)

    app.add_route("/files", download, methods=["GET"])
    # An upload's answer, a refusal too, waits for the upload's body (:mod:`.drain`).
    uploads = Route("/files", upload, methods=["POST"])
    uploads.app = answered_after_body(uploads.app)
    app.router.routes.append(uploads)
    app.router.routes.extend(filesystem_service().routes())
    app.router.routes.extend(process_routes())
    return app
