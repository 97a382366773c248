"""E2B's API on ``lmc serve``: the E2B SDKs, pointed at the server by their
environment variables alone, run unchanged.

- :mod:`.routing`: which service of E2B's a request is for;
- :mod:`.control`: the control plane (sandboxes' lifecycle);
- :mod:`.envd`: files and commands in a sandbox;
- :mod:`.interpreter`: ``run_code`` and contexts.

A sandbox is a session of the server's; what the lmc API refuses (limits,
paths, links) is refused here too.
"""

from __future__ import annotations

from fastapi import FastAPI

from ..service.state import Service
from .control import control_app
from .door import Door
from .envd import envd_app
from .interpreter import interpreter_app
from .registry import Sandboxes
from .routing import E2BRouter

__all__ = ["Door", "install_e2b"]


def install_e2b(app: FastAPI, service: Service) -> Door | None:
    """Put the E2B door in front of ``app``'s routes (an extension of
    :func:`~lmc_runtime.service.create_app`; None with ``--no-e2b``); its
    sandboxes live while the returned door runs (the application's lifespan runs it)."""
    if not service.settings.e2b:
        return None
    door = Door(service, Sandboxes(service.manager))
    app.add_middleware(
        E2BRouter,
        door=door,
        control=control_app(door),
        envd=envd_app(door),
        interpreter=interpreter_app(door),
    )
    return door
