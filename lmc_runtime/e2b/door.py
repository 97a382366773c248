"""What every part of the E2B door shares: the service behind it, its
sandboxes, and how a request's sandbox is found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskStatus
from starlette.requests import HTTPConnection

from ..service.state import Service
from .registry import E2BSandbox, Sandboxes

__all__ = ["ENVD_PORT", "INTERPRETER_PORT", "Door", "door_of", "sandbox_of"]

#: The ports E2B's SDKs reach inside a sandbox: envd (files, commands), and the
#: code interpreter (``run_code``, contexts).
ENVD_PORT = 49983
INTERPRETER_PORT = 49999

#: Where the router leaves the door and the request's sandbox in the ASGI scope.
DOOR_KEY = "lmc.e2b.door"
SANDBOX_KEY = "lmc.e2b.sandbox"


@dataclass
class Door:
    """One server's E2B door."""

    service: Service
    sandboxes: Sandboxes
    #: What each layer keeps for the whole server, by the layer's name (as
    #: :attr:`~.registry.E2BSandbox.layers` does for one sandbox).
    layers: dict[str, Any] = field(default_factory=dict)

    @property
    def domain(self) -> str | None:
        return self.service.settings.e2b_domain

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keep the door's sandboxes (their timeouts, their ends) while the server runs."""
        await self.sandboxes.run(task_status=task_status)


def door_of(connection: HTTPConnection) -> Door:
    """The door ``connection`` came through."""
    door = connection.scope[DOOR_KEY]
    assert isinstance(door, Door)
    return door


def sandbox_of(connection: HTTPConnection) -> E2BSandbox:
    """The sandbox ``connection``'s traffic is for (checked by the router)."""
    sandbox = connection.scope[SANDBOX_KEY]
    assert isinstance(sandbox, E2BSandbox)
    return sandbox
