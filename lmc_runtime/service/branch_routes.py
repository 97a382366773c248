"""The HTTP routes of a session's checkpoints, its rollback and its fork.

``POST /v1/sessions/{id}/checkpoints`` (201), ``GET .../checkpoints``,
``DELETE .../checkpoints/{cid}`` (204), ``POST .../rollback`` with
``{"checkpoint": cid}``, and ``POST .../fork`` (201, a new session). See
:mod:`.branches` and :mod:`.forking`.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from . import branches
from .errors import InvalidRequest
from .forking import fork_session
from .models import ErrorBody, SessionInfo
from .openapi import json_body
from .routes import require_token
from .state import info, service_of
from .streams import parse_json, read_body
from .wording import validation_text

__all__ = ["CheckpointInfo", "CheckpointList", "RollbackRequest", "branches_router"]

_ERRORS: dict[int | str, dict[str, object]] = {
    status: {"model": ErrorBody} for status in (400, 401, 404, 409, 410, 413, 429, 503)
}


class CheckpointInfo(BaseModel):
    """A checkpoint of a session: its interpreter's frozen state and a copy of its
    working directory. ``bytes`` is what it costs now: the private memory of its
    frozen process (``memory_bytes``, counted against the session's memory limit)
    and its files (``file_bytes``, counted against the disk limit). ``alive`` is
    false once its frozen process ended (a rollback to it answers 410)."""

    id: str
    created_at: float
    bytes: int
    memory_bytes: int
    file_bytes: int
    alive: bool


class CheckpointList(BaseModel):
    """``GET /v1/sessions/{id}/checkpoints``: oldest first."""

    checkpoints: list[CheckpointInfo]


class RollbackRequest(BaseModel):
    """``POST /v1/sessions/{id}/rollback``: the checkpoint to go back to."""

    model_config = ConfigDict(extra="forbid")

    checkpoint: str = Field(min_length=1, max_length=64)


def branches_router() -> APIRouter:
    """The checkpoint, rollback and fork routes, behind the bearer token."""
    router = APIRouter(prefix="/v1/sessions", dependencies=[Depends(require_token)])

    @router.post("/{session_id}/checkpoints", status_code=201, responses=_ERRORS)
    async def create_checkpoint(request: Request, session_id: str) -> CheckpointInfo:
        """Freeze the session's Python state and copy its working directory.
        409 while it runs code; 429 past ``--max-checkpoints``; 413 past its disk limit."""
        service = service_of(request)
        session = service.manager.get(session_id)
        taken = await branches.take(session, service.settings.max_checkpoints)
        return CheckpointInfo.model_validate(taken)

    @router.get("/{session_id}/checkpoints", responses=_ERRORS)
    async def list_checkpoints(request: Request, session_id: str) -> CheckpointList:
        session = service_of(request).manager.get(session_id)
        found = [CheckpointInfo.model_validate(each) for each in branches.listed(session)]
        return CheckpointList(checkpoints=found)

    @router.delete("/{session_id}/checkpoints/{checkpoint_id}", status_code=204, responses=_ERRORS)
    async def drop_checkpoint(request: Request, session_id: str, checkpoint_id: str) -> Response:
        session = service_of(request).manager.get(session_id)
        await branches.drop(session, checkpoint_id)
        return Response(status_code=204)

    @router.post(
        "/{session_id}/rollback", responses=_ERRORS, openapi_extra=json_body(RollbackRequest)
    )
    async def rollback(request: Request, session_id: str) -> CheckpointInfo:
        """Make the session's Python state and working directory the checkpoint's
        (it stays, for another rollback). 410 if its frozen process ended."""
        service = service_of(request)
        session = service.manager.get(session_id)
        body = await read_body(request, service.settings.max_request_bytes)
        try:
            spec = RollbackRequest.model_validate(parse_json(body))
        except ValueError as exc:
            raise InvalidRequest(validation_text(exc)) from exc
        restored = await branches.rollback(session, spec.checkpoint)
        return CheckpointInfo.model_validate(restored)

    @router.post("/{session_id}/fork", status_code=201, responses=_ERRORS)
    async def fork(request: Request, session_id: str) -> SessionInfo:
        """A new session with a copy of this one's working directory and its Python
        variables, carried by value; its own sandbox, limits and lifetime. Its
        first run says what did not carry. 409 while the session runs code."""
        service = service_of(request)
        session = service.manager.get(session_id)
        child = await fork_session(service.manager, session)
        service.metrics.session_created()
        return info(child)

    return router
