"""The control plane of the E2B door: create, list, get, kill, time out and
connect to sandboxes, in E2B's API (``spec/openapi.yml`` of e2b-dev/E2B); their
metrics, pause and resume (:mod:`.control_state`); fork (:mod:`.forking`); 501
for E2B's features this server does not have (:mod:`.unsupported`).

Authenticated by the server's token, sent as E2B's ``X-API-Key`` (the SDKs send
``E2B_API_KEY`` there) or as ``Authorization: Bearer``.
"""

from __future__ import annotations

import logging
import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse

from ..errors import TokenRejected
from ..service.models import CreateSession, checked_env
from ..web.auth import bearer_from_header
from .control_state import install_state
from .door import Door, door_of
from .errors import E2BError, NotImplementedInLmc, install_e2b_handlers
from .forking import install_fork
from .ids import new_sandbox_id, new_token
from .listing import listing
from .metrics import sample_while_running
from .models import ConnectSandbox, NewSandbox, TimeoutBody, detail, summary
from .network import session_network
from .registry import MAX_TIMEOUT, E2BSandbox
from .templates import e2b_languages, template_of
from .unsupported import install_unsupported

__all__ = ["control_app"]

logger = logging.getLogger(__name__)


def _authenticated(request: Request) -> None:
    door = door_of(request)
    auth = door.service.auth
    given = request.headers.get("x-api-key") or bearer_from_header(
        request.headers.get("authorization")
    )
    if not auth.valid(given):
        raise TokenRejected("send the server's token as X-API-Key (E2B_API_KEY)")


def _door(request: Request) -> Door:
    return door_of(request)


DoorDep = Annotated[Door, Depends(_door)]


async def _create(door: Door, body: NewSandbox) -> E2BSandbox:
    settings = door.service.settings
    template, environment = template_of(body.template_id, settings.data_dir)
    secure = bool(body.secure)
    if settings.e2b_require_secure and not secure:
        raise E2BError("this server only makes secure sandboxes: create it with secure=True", 400)
    env = dict(body.env_vars or {})
    try:
        checked_env(env)
    except ValueError as exc:
        raise E2BError(f"envVars: {exc}") from None
    lists = body.network
    network = session_network(
        body.allow_internet_access,
        lists.allow_out if lists is not None else None,
        lists.deny_out if lists is not None else None,
        settings.allow_network,
    )
    if body.mcp:
        raise NotImplementedInLmc("MCP servers in a sandbox", "this server runs none")
    if body.volume_mounts:
        raise NotImplementedInLmc("volumes", "each sandbox has a working directory of its own")
    auto_resume = body.auto_resume.enabled if body.auto_resume is not None else False
    if auto_resume and not body.auto_pause:
        raise E2BError("autoResume needs autoPause: a sandbox that is never paused", 400)
    request = CreateSession(
        languages=await e2b_languages(door.service.manager.registry),
        network=network,
        env=env,
        title=f"E2B sandbox ({template})",
        environment=environment,
    )
    session = await door.service.manager.create(request)
    now = time.time()
    sandbox = E2BSandbox(
        id=new_sandbox_id(),
        session=session,
        template=template,
        metadata=dict(body.metadata or {}),
        env_vars=env,
        started_at=now,
        end_at=now,
        secure=secure,
        access_token=new_token() if secure else None,
        allow_internet=network if network is None else network is not False,
        auto_pause=body.auto_pause,
        auto_resume=auto_resume,
        timeout=float(body.timeout),
    )
    # The sandbox's timeout governs, not the lmc API's idle clock.
    session.hold_open()
    door.sandboxes.add(sandbox)
    door.sandboxes.set_timeout(sandbox, body.timeout)
    await door.sandboxes.start_task(sample_while_running, sandbox)
    logger.info("sandbox %s created from %s (session %s)", sandbox.shown, template, session.id)
    return sandbox


def _lifecycle(router: APIRouter) -> None:
    @router.post("/sandboxes", status_code=201)
    async def create(door: DoorDep, body: NewSandbox) -> JSONResponse:
        sandbox = await _create(door, body)
        return JSONResponse(summary(sandbox, door.domain), status_code=201)

    @router.post("/v2/sandboxes", status_code=201)
    async def create_v2(door: DoorDep, body: NewSandbox) -> JSONResponse:
        """E2B's second create: its sandboxes are always secure."""
        sandbox = await _create(door, body.model_copy(update={"secure": True}))
        return JSONResponse(summary(sandbox, door.domain), status_code=201)

    @router.get("/sandboxes/{sandbox_id}")
    async def get(door: DoorDep, sandbox_id: str) -> dict[str, Any]:
        return detail(door.sandboxes.get(sandbox_id), door.domain)

    @router.delete("/sandboxes/{sandbox_id}", status_code=204)
    async def kill(door: DoorDep, sandbox_id: str) -> Response:
        await door.sandboxes.kill(door.sandboxes.get(sandbox_id))
        return Response(status_code=204)

    @router.post("/sandboxes/{sandbox_id}/timeout", status_code=204)
    async def set_timeout(door: DoorDep, sandbox_id: str, body: TimeoutBody) -> Response:
        door.sandboxes.set_timeout(door.sandboxes.get(sandbox_id), body.timeout)
        return Response(status_code=204)

    @router.post("/sandboxes/{sandbox_id}/refreshes", status_code=204)
    async def refresh(
        door: DoorDep, sandbox_id: str, body: Annotated[dict[str, Any] | None, Body()] = None
    ) -> Response:
        sandbox = door.sandboxes.get(sandbox_id)
        duration = (body or {}).get("duration")
        seconds = 60
        if isinstance(duration, int) and duration >= 0:
            seconds = min(duration, int(MAX_TIMEOUT))  # a number too large for a clock
        if sandbox.end_at < time.time() + seconds:
            door.sandboxes.set_timeout(sandbox, seconds)
        return Response(status_code=204)

    @router.post("/sandboxes/{sandbox_id}/connect")
    @router.post("/v2/sandboxes/{sandbox_id}/connect")
    async def connect(door: DoorDep, sandbox_id: str, body: ConnectSandbox) -> JSONResponse:
        """Connect to a sandbox: a paused one is resumed (201), with ``timeout``."""
        sandbox = door.sandboxes.get(sandbox_id)
        if door.sandboxes.resume(sandbox, body.timeout):
            return JSONResponse(summary(sandbox, door.domain), status_code=201)
        if sandbox.end_at < time.time() + body.timeout:  # "TTL is only extended"
            door.sandboxes.set_timeout(sandbox, body.timeout)
        return JSONResponse(summary(sandbox, door.domain), status_code=200)


def _listing(router: APIRouter) -> None:
    @router.get("/v2/sandboxes")
    async def list_v2(door: DoorDep, request: Request) -> JSONResponse:
        return listing(door.sandboxes, request, paged=True)

    @router.get("/sandboxes")
    async def list_v1(door: DoorDep, request: Request) -> JSONResponse:
        """The first list: the running sandboxes, every one at once."""
        running = [s for s in door.sandboxes if s.paused_at is None]
        return listing(running, request, paged=False)


def control_app(door: Door) -> FastAPI:
    """The control plane, an app of its own (E2B's error shape, not lmc's)."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    install_e2b_handlers(app)

    @app.get("/health")
    async def health() -> Response:
        return Response(status_code=503 if door.service.manager.shutting_down else 200)

    router = APIRouter(dependencies=[Depends(_authenticated)])
    install_state(router)
    _lifecycle(router)
    _listing(router)
    install_fork(router)
    install_unsupported(router)  # last: it answers every path left
    app.include_router(router)
    return app
