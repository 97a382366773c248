"""The parts of E2B's control plane that this server does not have: each is
answered 501 in E2B's shape, naming the feature and why, never a 404 of a
missing route (which the SDKs would take for a missing sandbox)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request

from .door import door_of
from .errors import NotImplementedInLmc

__all__ = ["install_unsupported"]

_NO_SNAPSHOTS = (
    "a session is not saved as a snapshot here; fork it (POST /sandboxes/{id}/fork), or keep "
    "checkpoints of it through the lmc API (POST /v1/sessions/{id}/checkpoints)"
)

#: (methods, path, feature, why), first match wins.
_FEATURES: tuple[tuple[tuple[str, ...], str, str, str], ...] = (
    (("POST",), "/sandboxes/{sandbox_id}/snapshots", "snapshots", _NO_SNAPSHOTS),
    (("GET",), "/snapshots", "snapshots", _NO_SNAPSHOTS),
    (
        ("PUT",),
        "/sandboxes/{sandbox_id}/network",
        "changing a sandbox's network",
        "a sandbox's network is set when it is made (allow_internet_access, network's "
        "allowOut and denyOut) and stays so",
    ),
    (
        ("GET",),
        "/sandboxes/{sandbox_id}/logs",
        "sandbox logs",
        "this server keeps no logs of a sandbox's own (its runs' output is returned as they run)",
    ),
    (
        ("GET",),
        "/v2/sandboxes/{sandbox_id}/logs",
        "sandbox logs",
        "this server keeps no logs of a sandbox's own (its runs' output is returned as they run)",
    ),
)

_PREFIXES: tuple[tuple[str, str, str], ...] = (
    (
        "/templates",
        "templates",
        "this server's sandboxes are made from its own configuration (lmc serve's languages, "
        "limits and network); the template names base and code-interpreter-v1 both mean it",
    ),
    ("/v2/templates", "templates", "see /templates"),
    ("/v3/templates", "templates", "see /templates"),
    ("/volumes", "volumes", "each sandbox has a working directory of its own and no volumes"),
    ("/secrets", "secrets", "this server has no secret store: give values as envs"),
    ("/teams", "teams", "this server has one token and no teams"),
)


def _refusal(feature: str, why: str) -> NotImplementedInLmc:
    return NotImplementedInLmc(feature, why)


def _bound(feature: str, why: str) -> Callable[[Request], Awaitable[None]]:
    async def refuse(request: Request) -> None:
        sandbox_id = request.path_params.get("sandbox_id")
        if sandbox_id is not None:
            door_of(request).sandboxes.get(sandbox_id)  # an unknown sandbox: 404
        raise _refusal(feature, why)

    return refuse


def install_unsupported(router: APIRouter) -> None:
    """Add the 501 routes to ``router``, the last one for any other path of the
    control plane's (add it after every route that is served)."""
    for methods, path, feature, why in _FEATURES:
        router.add_api_route(path, _bound(feature, why), methods=list(methods))

    async def anything_else(request: Request, rest: str) -> None:
        path = "/" + rest
        for prefix, feature, why in _PREFIXES:
            if path == prefix or path.startswith(prefix + "/"):
                raise _refusal(feature, why)
        raise _refusal(
            f"{request.method} {path[:80]}",
            "this part of E2B's API is not served here (see the docs' page on the E2B door)",
        )

    router.add_api_route(
        "/{rest:path}", anything_else, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]
    )
