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
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from ..service.logs import hide, unhide
from ..service.manager import SessionManager
from ..service.session import ServiceSession
from .errors import E2BError, SandboxNotFound
from .ids import same, shown
from .pausing import Frozen, freeze, hold, thaw
from .templates import e2b_languages

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
    #: How its processes were stopped while it is paused.
    frozen: Frozen | None = None
    #: Paused, not killed, when its timeout runs out (E2B's ``autoPause``); and
    #: resumed by its own traffic while paused (``autoResume``).
    auto_pause: bool = False
    auto_resume: bool = False
    #: The timeout it was made with, in seconds: what an automatic resumption gives.
    timeout: float = 300.0
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
        hide(sandbox.id, sandbox.shown)  # no log line shows a live id or token whole
        if sandbox.access_token is not None:
            hide(sandbox.access_token)
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

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run ``func(*args)`` while the sandboxes run (a layer's long-lived task);
        cancelled when the server stops."""
        if self._tg is None:
            raise RuntimeError("the E2B sandboxes are not running")
        self._tg.start_soon(func, *args)

    async def start_task(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
        """Start ``func(*args, task_status=...)`` in the sandboxes' task group, where
        it outlives the request that starts it (a context's interpreters); what it
        passes to ``task_status.started`` is returned, what it raises before is raised."""
        if self._tg is None:
            raise RuntimeError("the E2B sandboxes are not running")
        return await self._tg.start(func, *args)

    def set_timeout(self, sandbox: E2BSandbox, seconds: float) -> None:
        """End ``sandbox`` ``seconds`` from now (from its resumption, if paused)."""
        seconds = min(max(seconds, 0.0), MAX_TIMEOUT)
        if sandbox.paused_at is not None:
            sandbox.left_when_paused = seconds
        else:
            sandbox.end_at = time.time() + seconds
        self._wake()

    async def pause(self, sandbox: E2BSandbox) -> None:
        """Stop every process of ``sandbox`` where it stands, and its timeout's
        clock; a 409 if it is paused already."""
        if sandbox.paused_at is not None:
            raise E2BError(f"sandbox {sandbox.shown} is already paused", 409)
        left = max(0.0, sandbox.end_at - time.time())
        sandbox.paused_at = time.time()  # its traffic is refused from now on
        sandbox.left_when_paused = left
        claim = hold(sandbox.session)
        try:
            frozen = await anyio.to_thread.run_sync(freeze, sandbox.session)
        except BaseException:
            if claim is not None:
                claim.release()
            sandbox.paused_at = None
            raise
        frozen.claim = claim
        if sandbox.paused_at is None:  # resumed or killed while it was being paused
            thaw(frozen)
            return
        sandbox.frozen = frozen
        sandbox.session.set_paused(True)
        logger.info("sandbox %s paused", sandbox.shown)
        self._wake()

    def resume(self, sandbox: E2BSandbox, timeout: float | None = None) -> bool:
        """Let a paused ``sandbox`` go on, to end ``timeout`` seconds from now (when
        None: what was left of its timeout, or if nothing was, the timeout it was
        made with); False if it was not paused."""
        if sandbox.paused_at is None:
            return False
        frozen, sandbox.frozen = sandbox.frozen, None
        if frozen is not None:
            thaw(frozen)
        sandbox.session.set_paused(False)
        sandbox.paused_at = None
        left = sandbox.left_when_paused if timeout is None else timeout
        if timeout is None and left <= 0:
            left = sandbox.timeout
        sandbox.end_at = time.time() + min(max(left, 0.0), MAX_TIMEOUT)
        logger.info("sandbox %s resumed", sandbox.shown)
        self._wake()
        return True

    async def kill(self, sandbox: E2BSandbox, reason: str = "it was killed") -> None:
        """End ``sandbox`` and wait until its processes are gone."""
        self._forget(sandbox)
        self.resume(sandbox, 0)  # a stopped process cannot be told to end
        await self._close_layers(sandbox)
        session = sandbox.session
        session.stop(reason, "closed")
        with anyio.move_on_after(10):
            await session.closed.wait()

    def _forget(self, sandbox: E2BSandbox) -> None:
        if self._by_key.get(_key(sandbox.id)) is sandbox:
            del self._by_key[_key(sandbox.id)]
            unhide(sandbox.id)
            if sandbox.access_token is not None:
                unhide(sandbox.access_token)
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
            # The languages a sandbox gets are looked up now, not in the first create.
            tg.start_soon(e2b_languages, self.manager.registry)
            task_status.started()
            while True:
                changed = self._changed
                soonest: float | None = None
                for sandbox in self:
                    if sandbox.paused_at is not None:
                        continue
                    if sandbox.end_at <= time.time() and sandbox.auto_pause:
                        logger.info("sandbox %s timed out: pausing it", sandbox.shown)
                        sandbox.end_at = time.time() + MAX_TIMEOUT  # until it is paused
                        tg.start_soon(self._pause_or_kill, sandbox)
                    elif sandbox.end_at <= time.time():
                        logger.info("sandbox %s timed out", sandbox.shown)
                        tg.start_soon(self.kill, sandbox, "its timeout ran out")
                        self._forget(sandbox)
                    else:
                        soonest = min(soonest or sandbox.end_at, sandbox.end_at)
                wait = 3600.0 if soonest is None else soonest - time.time()
                with anyio.move_on_after(max(wait, 0.0)):
                    await changed.wait()

    async def _pause_or_kill(self, sandbox: E2BSandbox) -> None:
        """Pause ``sandbox`` whose timeout ran out; kill it if it cannot be paused."""
        try:
            await self.pause(sandbox)
        except Exception as exc:
            logger.warning("sandbox %s could not be paused (%s): killing it", sandbox.shown, exc)
            await self.kill(sandbox, "its timeout ran out and it could not be paused")

    async def _watch(self, sandbox: E2BSandbox) -> None:
        """Forget ``sandbox`` when its session ends."""
        await sandbox.session.ended.wait()
        self._forget(sandbox)
        await self._close_layers(sandbox)
