"""The control plane's routes for a running sandbox's state: its metrics, and
pausing and resuming it (:mod:`.pausing`).

A paused sandbox's timeout clock stops; resuming (``POST .../resume``, or
``connect``, as the SDKs do it) starts it again with the timeout given. Its
traffic is refused while it is paused (502, as E2B's proxy answers), unless it
was made with ``autoResume``: then its traffic resumes it (the router does).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Request, Response
from fastapi.responses import JSONResponse

from .door import Door, door_of
from .errors import E2BError
from .metrics import metrics_of
from .models import ResumedSandbox, summary

__all__ = ["install_state"]

#: How many sandboxes one ``GET /sandboxes/metrics`` may name.
MAX_METRICS_IDS = 100


def _door(request: Request) -> Door:
    return door_of(request)


DoorDep = Annotated[Door, Depends(_door)]


def install_state(router: APIRouter) -> None:
    """Add the metrics, pause and resume routes to ``router`` (before the route
    of ``GET /sandboxes/{id}``: ``/sandboxes/metrics`` is not a sandbox)."""

    @router.get("/sandboxes/metrics")
    async def many_metrics(
        door: DoorDep, sandbox_ids: Annotated[str, Query(max_length=10_000)] = ""
    ) -> dict[str, Any]:
        """The latest sample of each live sandbox named (the unknown are left out)."""
        ids = [i for i in sandbox_ids.split(",") if i]  # each exactly as it was given
        if len(ids) > MAX_METRICS_IDS:
            raise E2BError(f"sandbox_ids names more than {MAX_METRICS_IDS} sandboxes", 400)
        latest: dict[str, Any] = {}
        for sandbox_id in ids:
            sandbox = door.sandboxes.find(sandbox_id)
            samples = metrics_of(sandbox) if sandbox is not None else []
            if sandbox is not None and samples:
                latest[sandbox.id] = samples[-1]
        return {"sandboxes": latest}

    @router.get("/sandboxes/{sandbox_id}/metrics")
    async def metrics(
        door: DoorDep,
        sandbox_id: str,
        start: Annotated[int | None, Query(ge=0)] = None,
        end: Annotated[int | None, Query(ge=0)] = None,
    ) -> JSONResponse:
        sandbox = door.sandboxes.get(sandbox_id)
        return JSONResponse(metrics_of(sandbox, start, end))

    @router.post("/sandboxes/{sandbox_id}/pause", status_code=204)
    async def pause(
        door: DoorDep,
        sandbox_id: str,
        body: Annotated[dict[str, Any] | None, Body()] = None,
    ) -> Response:
        """Pause it, memory and all (``memory: false``, a pause that keeps only the
        files, is served the same way: nothing is lost)."""
        await door.sandboxes.pause(door.sandboxes.get(sandbox_id))
        return Response(status_code=204)

    @router.post("/sandboxes/{sandbox_id}/resume", status_code=201)
    async def resume(
        door: DoorDep,
        sandbox_id: str,
        body: Annotated[ResumedSandbox | None, Body()] = None,
    ) -> JSONResponse:
        sandbox = door.sandboxes.get(sandbox_id)
        asked = body or ResumedSandbox()
        if not door.sandboxes.resume(sandbox, asked.timeout):
            raise E2BError(f"sandbox {sandbox.shown} is already running", 409)
        if asked.auto_pause is not None:
            sandbox.auto_pause = asked.auto_pause
        return JSONResponse(summary(sandbox, door.domain), status_code=201)
