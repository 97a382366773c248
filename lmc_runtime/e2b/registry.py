"""The E2B sandboxes of one server: each is a session of the
:class:`~lmc_runtime.service.manager.SessionManager` with E2B's bookkeeping
around it (its template, metadata, timeout, pause, tokens, contexts and
processes), and it ends when its timeout runs out.

A sandbox id is a bearer capability (:mod:`.ids`): sandboxes are found by the
SHA-256 of the id, then the id itself is compared in constant time, so how long
a lookup takes says nothing of the ids that exist.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from ..service.manager import SessionManager
from ..service.session import ServiceSession
from .errors import SandboxNotFound
from .ids import same, shown

__all__ = ["E2BSandbox", "Sandboxes"]

logger = logging.getLogger(__name__)

#: What the timeout of a sandbox may be at the most (E2B's Pro tier: 24 hours).
MAX_TIMEOUT = 24 * 3600.0


@dataclass(eq=False)
class E2BSandbox:
    """One E2B sandbox: a session and what E2B's API says of it."""

    id: str
    session: ServiceSession
    template: str
    metadata: dict[str, str]
    env_vars: dict[str, str]
    started_at: float
    end_at: float
    secure: bool = False
    #: envd's access token (``X-Access-Token``), when made with ``secure=True``.
    access_token: str | None = None
    allow_internet: bool | None = None
    #: When it was paused (None: running), and how much of its timeout was left.
    paused_at: float | None = None
    left_when_paused: float = 0.0
    #: What each layer keeps for this sandbox (the processes, the contexts), by
    #: the layer's name; each layer types its own entry.
    layers: dict[str, Any] = field(default_factory=dict)
    #: Called once when the sandbox ends, newest first.
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @property
    def shown(self) -> str:
        return shown(self.id)

    @property
    def running(self) -> bool:
        return self.paused_at is None and not self.session.ended.is_set()

    @property
    def state(self) -> str:
        return "paused" if self.paused_at is not None else "running"


def _key(sandbox_id: str) -> bytes:
    return hashlib.sha256(sandbox_id.encode()).digest()


class Sandboxes:
    """The live E2B sandboxes, and the task that ends them when their time is up."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager
        self._by_key: dict[bytes, E2BSandbox] = {}
        self._changed = anyio.Event()
        self._tg: TaskGroup | None = None

    def __iter__(self) -> Iterator[E2BSandbox]:
        return iter(list(self._by_key.values()))

    def __len__(self) -> int:
        return len(self._by_key)

    def add(self, sandbox: E2BSandbox) -> None:
        """Keep ``sandbox`` until it is killed, times out or its session ends."""
        if self._tg is None:
            raise RuntimeError("the E2B sandboxes are not running")
        self._by_key[_key(sandbox.id)] = sandbox
        self._tg.start_soon(self._watch, sandbox)
        self._wake()

    def find(self, sandbox_id: str) -> E2BSandbox | None:
        """The live sandbox ``sandbox_id``, or None."""
        sandbox = self._by_key.get(_key(sandbox_id))
        if sandbox is None or not same(sandbox_id, sandbox.id):
            return None
        if sandbox.session.ended.is_set():
            self._forget(sandbox)
            return None
        return sandbox

    def get(self, sandbox_id: str) -> E2BSandbox:
        """The live sandbox ``sandbox_id``; :class:`SandboxNotFound` otherwise."""
        sandbox = self.find(sandbox_id)
        if sandbox is None:
            raise SandboxNotFound(shown(sandbox_id))
        return sandbox

    def set_timeout(self, sandbox: E2BSandbox, seconds: float) -> None:
        """End ``sandbox`` ``seconds`` from now (from its resumption, if paused)."""
        seconds = min(max(seconds, 0.0), MAX_TIMEOUT)
        if sandbox.paused_at is not None:
            sandbox.left_when_paused = seconds
        else:
            sandbox.end_at = time.time() + seconds
        self._wake()

    async def kill(self, sandbox: E2BSandbox, reason: str = "it was killed") -> None:
        """End ``sandbox`` and wait until its processes are gone."""
        self._forget(sandbox)
        await self._close_layers(sandbox)
        session = sandbox.session
        session.stop(reason, "closed")
        with anyio.move_on_after(10):
            await session.closed.wait()

    def _forget(self, sandbox: E2BSandbox) -> None:
        if self._by_key.get(_key(sandbox.id)) is sandbox:
            del self._by_key[_key(sandbox.id)]
            self._wake()

    async def _close_layers(self, sandbox: E2BSandbox) -> None:
        closers, sandbox.closers = sandbox.closers, []
        for close in reversed(closers):
            try:
                with anyio.CancelScope(shield=True):
                    await close()
            except Exception:
                logger.warning("closing sandbox %s failed", sandbox.shown, exc_info=True)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """End each sandbox when its timeout runs out, and forget one whose
        session ends otherwise (its limits, the operator, the server's shutdown)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            while True:
                changed = self._changed
                soonest: float | None = None
                for sandbox in self:
                    if sandbox.paused_at is not None:
                        continue
                    if sandbox.end_at <= time.time():
                        logger.info("sandbox %s timed out", sandbox.shown)
                        tg.start_soon(self.kill, sandbox, "its timeout ran out")
                        self._forget(sandbox)
                    else:
                        soonest = min(soonest or sandbox.end_at, sandbox.end_at)
                wait = 3600.0 if soonest is None else soonest - time.time()
                with anyio.move_on_after(max(wait, 0.0)):
                    await changed.wait()

    async def _watch(self, sandbox: E2BSandbox) -> None:
        """Forget ``sandbox`` when its session ends."""
        await sandbox.session.ended.wait()
        self._forget(sandbox)
        await self._close_layers(sandbox)
