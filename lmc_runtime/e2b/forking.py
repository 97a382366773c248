"""E2B's ``POST /sandboxes/{id}/fork``: ``count`` new sandboxes made from one.

Each fork is the lmc API's fork of the sandbox's session
(:func:`~lmc_runtime.service.forking.fork_session`): a new session of its own
(sandbox, host uid, cgroup, limits) with the working directory copied and the
session's Python variables carried by value. The code interpreter's contexts
(:mod:`.interpreter`) start afresh in it. As E2B answers, a 201 lists one result
per fork, a sandbox or the error that prevented it; another status means no
fork was tried (the sandbox is unknown, paused or running code).
"""

from __future__ import annotations

import logging
import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from ..errors import LMCError
from ..service.forking import fork_session
from ..service.problems import problem_for
from .door import door_of
from .errors import E2BError
from .ids import new_sandbox_id, new_token
from .metrics import sample_while_running
from .models import summary
from .registry import E2BSandbox

__all__ = ["ForkRequest", "install_fork"]

logger = logging.getLogger(__name__)


class ForkRequest(BaseModel):
    """E2B's ``SandboxForkRequest``: each fork's timeout, and how many."""

    model_config = ConfigDict(extra="ignore")

    timeout: int = Field(15, ge=0)
    count: int = Field(1, ge=1, le=100)


def install_fork(router: APIRouter) -> None:
    """Add ``POST /sandboxes/{sandbox_id}/fork`` to ``router``."""

    @router.post("/sandboxes/{sandbox_id}/fork", status_code=201)
    async def fork(
        request: Request,
        sandbox_id: str,
        body: Annotated[ForkRequest | None, Body()] = None,
    ) -> JSONResponse:
        door = door_of(request)
        spec = body or ForkRequest.model_validate({})
        parent = door.sandboxes.get(sandbox_id)
        if parent.paused_at is not None:
            raise E2BError(f"sandbox {parent.shown} is paused: resume it first", 409)
        if parent.session.busy:
            raise E2BError(f"sandbox {parent.shown} is running code; wait or interrupt it", 409)
        results: list[dict[str, Any]] = []
        for _ in range(spec.count):
            try:
                session = await fork_session(door.service.manager, parent.session)
            except LMCError as exc:
                problem = problem_for(exc)
                status, message = (problem.status, problem.message) if problem else (500, str(exc))
                results.append({"error": {"code": status, "message": message}})
                continue
            child = _register(parent, session, spec.timeout)
            door.sandboxes.add(child)
            door.sandboxes.set_timeout(child, spec.timeout)
            await door.sandboxes.start_task(sample_while_running, child)
            logger.info("sandbox %s forked from %s", child.shown, parent.shown)
            results.append({"sandbox": summary(child, door.domain)})
        return JSONResponse(results, status_code=201)


def _register(parent: E2BSandbox, session: Any, timeout: int) -> E2BSandbox:
    """The E2B sandbox of a forked ``session``, described as its parent is."""
    now = time.time()
    session.hold_open()  # its timeout governs, not the lmc API's idle clock
    return E2BSandbox(
        id=new_sandbox_id(),
        session=session,
        template=parent.template,
        metadata=dict(parent.metadata),
        env_vars=dict(parent.env_vars),
        started_at=now,
        end_at=now,
        secure=parent.secure,
        access_token=new_token() if parent.secure else None,
        allow_internet=parent.allow_internet,
        auto_pause=parent.auto_pause,
        auto_resume=parent.auto_resume,
        timeout=float(timeout),
    )
