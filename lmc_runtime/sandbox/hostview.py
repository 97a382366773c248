"""What every session's sandbox on one host shares, looked up once in a while.

Each session's start used to ask again whether bubblewrap works (a bwrap
run), which folders the sandbox binds, and which entries under ``/etc`` only
root may read (a walk of ``/etc``): some 25 ms of CPU a session, the same
answer each time. A :class:`HostView` keeps the answer for ``ttl`` seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import anyio

from ..backends.base import Availability
from .bwrap import find_bwrap, private_entries, sandbox_available, system_paths

__all__ = ["HostFacts", "HostView"]


@dataclass(frozen=True)
class HostFacts:
    """Whether bubblewrap works, where it is, what sandboxes bind read-only and
    what they hide (the entries of ``/etc`` others may not read)."""

    availability: Availability
    bwrap: str | None
    system: tuple[Path, ...]
    hidden: tuple[Path, ...]


def look_up(sandboxed: bool) -> HostFacts:
    """The facts now (blocking: run it in a worker thread)."""
    availability = sandbox_available() if sandboxed else Availability.yes()
    return HostFacts(
        availability=availability,
        bwrap=find_bwrap() if sandboxed else None,
        system=tuple(system_paths()),
        hidden=tuple(private_entries([Path("/etc")])) if sandboxed else (),
    )


class HostView:
    """:class:`HostFacts`, looked up again once they are ``ttl`` seconds old
    (0: at every call)."""

    def __init__(self, ttl: float = 60.0) -> None:
        self.ttl = ttl
        self._facts: dict[bool, tuple[float, HostFacts]] = {}
        self._lock = anyio.Lock()

    async def facts(self, *, sandboxed: bool) -> HostFacts:
        """The facts for sandboxes with bubblewrap (``sandboxed``) or without."""
        async with self._lock:
            now = anyio.current_time()
            taken, facts = self._facts.get(sandboxed, (-math.inf, None))
            if facts is None or now - taken >= self.ttl:
                facts = await anyio.to_thread.run_sync(look_up, sandboxed)
                self._facts[sandboxed] = (now, facts)
            return facts
