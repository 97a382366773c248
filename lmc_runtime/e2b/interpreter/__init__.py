"""E2B's code interpreter for each sandbox: ``POST /execute`` streamed as lines
of JSON (:mod:`.runs`, :mod:`.events`), and its contexts (:mod:`.contexts`):
``GET``/``POST /contexts``, ``DELETE /contexts/{id}``,
``POST /contexts/{id}/restart``.

Bodies are read up to the server's ``max_request_bytes`` (a 413 past it) and
checked before anything runs: a malformed one is a 400, never a 500.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from ...service.errors import RequestTooLarge
from ...service.streams import parse_json, read_body
from ...service.wording import invalid_fields
from ..door import Door, door_of, sandbox_of
from ..errors import E2BError, install_e2b_handlers
from .contexts import contexts_of
from .languages import e2b_language
from .runs import EventStream, run_events

__all__ = ["interpreter_app"]

#: How many variables one run's ``env_vars`` may set.
MAX_ENV_VARS = 1000


class ExecuteRequest(BaseModel):
    """``POST /execute``'s body, as E2B's SDKs send it."""

    model_config = ConfigDict(extra="ignore")

    code: StrictStr
    context_id: StrictStr | None = None
    language: StrictStr | None = Field(default=None, max_length=64)
    env_vars: dict[StrictStr, StrictStr] | None = Field(default=None, max_length=MAX_ENV_VARS)
    timeout: float | None = Field(default=None, gt=0)


class CreateContext(BaseModel):
    """``POST /contexts``'s body."""

    model_config = ConfigDict(extra="ignore")

    language: StrictStr | None = Field(default=None, max_length=64)
    cwd: StrictStr | None = Field(default=None, max_length=4096)


async def _body(request: Request, model: type[BaseModel], *, empty_ok: bool = False) -> Any:
    limit = door_of(request).service.settings.max_request_bytes
    try:
        body = await read_body(request, limit)
    except RequestTooLarge as exc:
        raise E2BError(f"the request body is larger than {limit} bytes", 413) from exc
    data = parse_json(body) if body.strip() or not empty_ok else {}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise E2BError(invalid_fields(exc.errors(), located=True), 400) from exc


def interpreter_app(door: Door) -> FastAPI:
    """The code interpreter of every sandbox of ``door``."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    install_e2b_handlers(app)

    @app.get("/health")
    async def health() -> Response:
        return JSONResponse("OK")

    @app.post("/execute")
    async def execute(request: Request) -> Response:
        spec: ExecuteRequest = await _body(request, ExecuteRequest)
        sandbox = sandbox_of(request)
        contexts = contexts_of(door_of(request), sandbox)
        if spec.context_id and spec.language:
            raise E2BError("only one of context_id or language can be provided", 400)
        if spec.context_id:
            context = contexts.get(spec.context_id)
        else:
            context = contexts.default(e2b_language(spec.language))
        timeout = spec.timeout
        wall = sandbox.session.policy.limits.wall_seconds
        if wall is not None:
            timeout = wall if timeout is None else min(timeout, wall)
        events = run_events(sandbox, contexts, context, spec.code, spec.env_vars, timeout)
        return EventStream(events)

    @app.post("/contexts")
    async def create_context(request: Request) -> Response:
        spec: CreateContext = await _body(request, CreateContext, empty_ok=True)
        contexts = contexts_of(door_of(request), sandbox_of(request))
        context = await contexts.create(e2b_language(spec.language), spec.cwd or "/home/user")
        return JSONResponse(context.info())

    @app.get("/contexts")
    async def list_contexts(request: Request) -> Response:
        contexts = contexts_of(door_of(request), sandbox_of(request))
        return JSONResponse([context.info() for context in contexts.list()])

    @app.post("/contexts/{context_id}/restart")
    async def restart_context(request: Request, context_id: str) -> Response:
        await contexts_of(door_of(request), sandbox_of(request)).restart(context_id)
        return Response(status_code=204)

    @app.delete("/contexts/{context_id}")
    async def remove_context(request: Request, context_id: str) -> Response:
        await contexts_of(door_of(request), sandbox_of(request)).remove(context_id)
        return Response(status_code=204)

    return app
