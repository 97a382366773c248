"""The HTTP routes for sessions: create, list, get, delete, execute, interrupt,
restart; and the languages sessions may use."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.security import HTTPAuthorizationCredentials

from ..execution import language_statuses
from .drain import drain_of
from .errors import InvalidRequest, ShuttingDown, UnknownLanguage
from .hot import start_execution
from .models import (
    CodeMessage,
    CreateSession,
    ErrorBody,
    LanguageInfo,
    LanguageList,
    RestartRequest,
    SessionInfo,
    SessionList,
)
from .openapi import BEARER, json_body
from .state import info, service_of
from .streams import NdjsonExecution, parse_json, read_body
from .wording import validation_text

__all__ = ["languages_router", "require_token", "sessions_router"]


async def require_token(
    request: Request,
    _declared: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
) -> None:
    """Dependency: 401 unless the request carries the bearer token (declared in
    OpenAPI as ``bearerAuth``; checked here, by the service's authenticator)."""
    service_of(request).auth.check_http(request.headers)


_ERRORS: dict[int | str, dict[str, object]] = {
    status: {"model": ErrorBody} for status in (400, 401, 404, 409, 410, 413, 429, 503)
}


def sessions_router() -> APIRouter:
    """The ``/v1/sessions`` routes, all behind the bearer token."""
    router = APIRouter(prefix="/v1/sessions", dependencies=[Depends(require_token)])
    _add_lifecycle(router)
    _add_execution(router)
    return router


def _add_lifecycle(router: APIRouter) -> None:
    """Create, list, get and delete sessions."""

    @router.post(
        "",
        status_code=201,
        responses=_ERRORS,
        openapi_extra=json_body(CreateSession, required=False),
    )
    async def create_session(request: Request) -> SessionInfo:
        service = service_of(request)
        if drain_of(request).draining:
            raise ShuttingDown()
        body = await read_body(request, service.settings.max_request_bytes)
        data = parse_json(body) if body.strip() else {}
        try:
            spec = CreateSession.model_validate(data)
        except ValueError as exc:
            raise InvalidRequest(validation_text(exc)) from exc
        session = await service.manager.create(spec)
        service.metrics.session_created()
        return info(session)

    @router.get("", responses=_ERRORS)
    async def list_sessions(
        request: Request, usage: Annotated[bool, Query()] = False
    ) -> SessionList:
        """The live sessions; ``usage=true``: each with its resource usage (as
        one session's ``GET`` has it), read from its cgroup and disk."""
        sessions = service_of(request).manager.sessions.values()
        return SessionList(
            sessions=[info(s, with_usage=usage) for s in sessions if not s.ended.is_set()]
        )

    @router.get("/{session_id}", responses=_ERRORS)
    async def get_session(request: Request, session_id: str) -> SessionInfo:
        return info(service_of(request).manager.get(session_id), with_usage=True)

    @router.delete("/{session_id}", status_code=204, responses=_ERRORS)
    async def delete_session(request: Request, session_id: str) -> Response:
        await service_of(request).manager.delete(session_id)
        return Response(status_code=204)


def _add_execution(router: APIRouter) -> None:
    """Execute code in a session, interrupt it, restart an interpreter."""

    @router.post(
        "/{session_id}/execute",
        responses={**_ERRORS, 200: {"content": {"application/x-ndjson": {}}}},
        response_class=Response,
        openapi_extra=json_body(CodeMessage),
    )
    async def execute(
        request: Request,
        session_id: str,
        timeout: Annotated[float | None, Query(gt=0)] = None,
    ) -> NdjsonExecution:
        """Run one LMC code message; the reply is one computer message per line.

        Served by :func:`~lmc_runtime.service.hot.execute_route` in the
        application; declared here for the OpenAPI document."""
        return await start_execution(request, session_id, timeout)

    @router.post("/{session_id}/interrupt", status_code=202, responses=_ERRORS)
    async def interrupt(request: Request, session_id: str) -> SessionInfo:
        session = service_of(request).manager.get(session_id)
        computer = session.computer
        if computer is not None:
            await computer.ainterrupt()
        session.touch()
        return info(session)

    @router.post(
        "/{session_id}/restart",
        responses=_ERRORS,
        openapi_extra=json_body(RestartRequest, required=False),
    )
    async def restart(request: Request, session_id: str) -> SessionInfo:
        service = service_of(request)
        session = service.manager.get(session_id)
        body = await read_body(request, service.settings.max_request_bytes)
        try:
            spec = RestartRequest.model_validate(parse_json(body) if body.strip() else {})
        except ValueError as exc:
            raise InvalidRequest(validation_text(exc)) from exc
        computer = session.computer
        if computer is not None:
            if computer.registry.resolve(spec.language) is None:
                raise UnknownLanguage(spec.language)
            await computer.arestart(spec.language)
        session.touch()
        return info(session)


def languages_router() -> APIRouter:
    """``GET /v1/languages``, behind the bearer token."""
    router = APIRouter(prefix="/v1", dependencies=[Depends(require_token)])

    @router.get("/languages", responses=_ERRORS)
    async def languages(request: Request) -> LanguageList:
        """Every language the server knows, whether sessions can use it, and if not, why."""
        # In the event loop, like the manager's own look-ups: the registry loads
        # backends on first use and is not shared with threads.
        statuses = language_statuses(service_of(request).manager.registry)
        return LanguageList(
            languages=[
                LanguageInfo(
                    name=s.name, available=s.available, reason=s.reason, aliases=list(s.aliases)
                )
                for s in statuses.values()
            ]
        )

    return router
