"""The OpenAPI document and its Swagger UI, served from this machine.

Request bodies are read by the routes themselves, through
:func:`~lmc_runtime.service.streams.read_body` and its size limit, so FastAPI
does not see them: :func:`json_body` declares a route's body in the document,
and :func:`install_openapi` adds the models' schemas to its components. The
bearer token is declared as the ``bearerAuth`` security scheme
(:data:`BEARER`), so Swagger's Authorize button works; the token itself is
checked by :mod:`lmc_runtime.web.auth`. ``/docs`` loads Swagger UI's
files from the ``swagger-ui-bundle`` package under ``/docs/assets``: nothing
is fetched from elsewhere.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

__all__ = ["ASSETS", "BEARER", "install_docs", "install_openapi", "json_body"]

logger = logging.getLogger(__name__)

#: Where Swagger UI's own files are served.
ASSETS = "/docs/assets"

#: The bearer token as OpenAPI declares it; a missing token is left to the
#: authenticator, which answers it in the service's error format.
BEARER = HTTPBearer(
    auto_error=False,
    scheme_name="bearerAuth",
    description="The token lmc serve was started with (LMC_TOKEN).",
)

_COMPONENTS = "#/components/schemas/"


def json_body(model: type[BaseModel], *, required: bool = True) -> dict[str, Any]:
    """``openapi_extra`` declaring ``model`` as a route's JSON body (the route
    reads the body itself; ``model`` must be given to :func:`install_openapi`)."""
    schema = {"$ref": _COMPONENTS + model.__name__}
    return {
        "requestBody": {
            "required": required,
            "content": {"application/json": {"schema": schema}},
        }
    }


def _body_refs(app: FastAPI) -> set[str]:
    """The component names the routes' declared bodies refer to."""
    names = set()
    for route in app.routes:
        extra = route.openapi_extra if isinstance(route, APIRoute) else None
        content = ((extra or {}).get("requestBody") or {}).get("content") or {}
        for media in content.values():
            ref = str((media.get("schema") or {}).get("$ref", ""))
            if ref.startswith(_COMPONENTS):
                names.add(ref.removeprefix(_COMPONENTS))
    return names


def install_openapi(app: FastAPI, bodies: Iterable[type[BaseModel]]) -> None:
    """Have ``app``'s OpenAPI document hold the schemas of ``bodies`` (the models
    of the request bodies the routes read themselves)."""
    models = list(bodies)
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        _, defs = models_json_schema(
            [(model, "validation") for model in models],
            ref_template=_COMPONENTS + "{model}",
        )
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        for name, schema in defs.get("$defs", {}).items():
            schemas.setdefault(name, schema)
        missing = _body_refs(app) - schemas.keys()
        if missing:
            logger.error("request bodies without a schema in OpenAPI: %s", sorted(missing))
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def install_docs(app: FastAPI, title: str) -> None:
    """Serve Swagger UI at ``/docs`` from the installed ``swagger-ui-bundle``."""
    app.mount(ASSETS, StaticFiles(directory=swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        assets = root + ASSETS
        return get_swagger_ui_html(
            openapi_url=root + (app.openapi_url or "/openapi.json"),
            title=f"{title} - API",
            swagger_js_url=f"{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets}/swagger-ui.css",
            swagger_favicon_url=f"{assets}/favicon-32x32.png",
            swagger_ui_parameters={"persistAuthorization": True},
        )
