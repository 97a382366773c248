"""One session of the service: a sandbox, a Computer inside it, and its lifetime.

A session lives in one task (:meth:`ServiceSession.run`) of the manager's task group:
it starts the sandbox, opens a Computer wired to it, may warm a Python kernel, waits
until it is stopped or idle too long, then closes the Computer and the sandbox (which
kills every process the session started). A second execution at a time gets SessionBusy.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskStatus

from .. import replies
from ..backends.jupyter.gateway.rest import Gateway
from ..backends.registry import Registry
from ..computer import Computer
from ..messages import Message
from ..sandbox import Sandbox, SandboxPolicy
from ..sandbox.fileops import make_directory
from .errors import SessionBusy, SessionEnded
from .execution import Claim, recorded_run
from .transcript import Transcripts

if TYPE_CHECKING:
    from .branches import SessionCheckpoint
    from .metrics import ServiceMetrics

__all__ = ["Claim", "ServiceSession", "service_gateway"]

logger = logging.getLogger(__name__)


def service_gateway(url: str | None, token: str | None) -> Gateway | None:
    """The gateway of ``lmc serve --gateway-url/--gateway-token``, if one was given."""
    return Gateway(url.rstrip("/"), token) if url else None


class ServiceSession:
    """A sandboxed Computer with an id, an idle clock and a busy flag."""

    def __init__(
        self,
        session_id: str,
        sandbox: Sandbox,
        policy: SandboxPolicy,
        languages: list[str],
        transcripts: Transcripts,
        *,
        sandboxed: bool,
        idle_timeout: float | None,
        in_pool: bool = False,
        cwd: str = "",
        metrics: ServiceMetrics | None = None,
        gateway: Gateway | None = None,
        registry: Registry | None = None,
    ) -> None:
        """``cwd``: where its code runs, relative to the sandbox's working
        directory (made with its parents when the session starts). ``gateway``:
        its Python and R kernels run there, outside the sandbox, with the
        session's own variables (the policy's ``env``); other languages stay in it.
        ``registry``: its languages' backends when none runs on a gateway, shared
        with the server's other sessions of the same Python (each interpreter's
        check, ``R`` run to look for IRkernel for one, then runs once a server, not
        once a session, on the event loop); None: its own."""
        self.id = session_id
        self.sandbox = sandbox
        self.policy = policy
        self.languages = languages
        self.cwd = cwd
        self.title = ""
        self.metrics = metrics
        self.sandboxed = sandboxed
        self.pooled = in_pool
        self.in_pool = in_pool
        self.created_at = time.time()
        self.last_active = self.created_at
        self.computer: Computer | None = None
        self.start_error: BaseException | None = None
        self.end_reason: str | None = None
        self.end_status = "closed"
        self.ready = anyio.Event()
        self.ended = anyio.Event()
        self.closed = anyio.Event()
        self.transcripts = transcripts
        #: Its checkpoints, by id, oldest first (see :mod:`.branches`).
        self.checkpoints: dict[str, SessionCheckpoint] = {}
        self._gateway = gateway
        self._registry = registry
        self._idle_timeout = idle_timeout
        self._idle_since = anyio.current_time()
        self._busy = anyio.Semaphore(1)
        self._stop = anyio.Event()
        self._changed = anyio.Event()
        #: Called when a run starts or ends, or a pause (the manager's feed of events).
        self.on_state: Callable[[ServiceSession], None] | None = None
        #: Its processes stopped where they stand (E2B's pause), until resumed.
        self.paused = False

    # -- state -------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._busy.value == 0

    @property
    def state(self) -> str:
        if self.ended.is_set():
            return "closing"
        if not self.ready.is_set():
            return "starting"
        return "paused" if self.paused else "busy" if self.busy else "idle"

    def set_paused(self, paused: bool) -> None:
        """Show it as paused (or not) from now on, and tell the feed of events."""
        changed, self.paused = paused != self.paused, paused
        if changed and self.on_state:
            self.on_state(self)

    @property
    def limits(self) -> dict[str, Any]:
        return asdict(self.policy.limits)

    def touch(self) -> None:
        """Record activity: the idle clock starts again."""
        self.last_active = time.time()
        self._idle_since = anyio.current_time()
        self._wake()

    def hold_open(self) -> None:
        """Never cull this session for idleness: something else ends it (an E2B
        sandbox's timeout)."""
        self._idle_timeout = None
        self._wake()

    def claim(self, title: str = "") -> None:
        """Take this session out of the pool for a client (who may title it)."""
        self.in_pool, self.title = False, title
        self.created_at = time.time()
        self.touch()

    def usage(self) -> dict[str, Any] | None:
        try:
            usage = self.sandbox.usage()
        except Exception:
            logger.debug("usage of session %s unavailable", self.id, exc_info=True)
            return None
        if isinstance(usage, dict):
            return usage
        with contextlib.suppress(TypeError):
            return asdict(usage)
        return None

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # -- lifetime ----------------------------------------------------------

    async def run(
        self, *, warm: bool, gate: anyio.Semaphore, task_status: TaskStatus[None]
    ) -> None:
        """The session's whole life; never raises into the manager's task group.

        ``gate`` bounds how many sessions start at once, so that a burst of
        creations queues instead of starving every kernel of CPU.
        """
        task_status.started()
        try:
            await gate.acquire()
            try:
                await self.sandbox.start()
                computer = self.sandbox.computer(
                    outputs_at=f"/v1/sessions/{self.id}/outputs/",
                    **await self._placement(),
                    **self._kernels(),
                )
                await computer.__aenter__()
            except BaseException:
                gate.release()
                raise
            async with contextlib.AsyncExitStack() as stack:
                stack.push_async_exit(computer.__aexit__)
                self.computer = computer
                try:
                    if warm:
                        await _warm(computer)
                finally:
                    gate.release()
                self.touch()
                self.ready.set()
                await self._watch()
        except Exception as exc:
            if not self.ready.is_set():
                self.start_error = exc
                logger.warning("session %s did not start: %r", self.id, exc)
            else:
                logger.exception("session %s failed", self.id)
                self.end_reason = self.end_reason or f"the session failed: {exc!r}"
        finally:
            self.ready.set()
            self.ended.set()
            self.computer = None
            with anyio.CancelScope(shield=True):
                try:
                    await self.sandbox.aclose()
                except Exception:
                    logger.exception("closing the sandbox of session %s failed", self.id)
                self.closed.set()

    async def _placement(self) -> dict[str, Any]:
        """The Computer's ``cwd``: the session's folder, made with its parents."""
        if not self.cwd:
            return {}
        work_dir, owner = self.sandbox.work_dir, self.sandbox.owner
        await anyio.to_thread.run_sync(
            lambda: make_directory(work_dir, self.cwd, parents=True, owner=owner)
        )
        return {"cwd": work_dir / self.cwd}

    def _kernels(self) -> dict[str, Any]:
        """The Computer's registry when its kernels run on a gateway, or its Python
        is an environment's (which keeps Python here, on that interpreter)."""
        environment = self.policy.environment
        python = str(environment.python) if environment is not None else None
        if self._gateway is None and self._registry is not None:
            return {"registry": self._registry}
        if self._gateway is None:
            return {"python": python} if python is not None else {}
        gateway = replace(self._gateway, env=dict(self.policy.env))
        return {"registry": Registry(python=python, gateway=gateway)}

    async def _watch(self) -> None:
        while not self._stop.is_set():
            changed = self._changed
            if self._idle_timeout is None or self.in_pool or self.busy:
                await changed.wait()
                continue
            deadline = self._idle_since + self._idle_timeout
            with anyio.move_on_at(deadline):
                await changed.wait()
            if changed.is_set() or self.busy:
                continue
            self.end_status = "culled"
            self.end_reason = f"it was idle for more than {self._idle_timeout:g} s and was culled"
            logger.info("session %s culled after %g s idle", self.id, self._idle_timeout)
            await self.transcripts.append(self.id, [self.end_notice()])
            return

    def stop(self, reason: str, status: str = "closed") -> None:
        """Ask the session to end (its task closes everything)."""
        if self.end_reason is None:
            self.end_reason, self.end_status = reason, status
        self._stop.set()
        self._wake()

    def end_notice(self) -> Message:
        """The message that tells a connected client why the session ended."""
        return replies.notice(
            f"Session {self.id} has ended: {self.end_reason}. Its state is gone.",
            self.end_status,
            None,
            session=self.id,
            reason=self.end_reason,
            state_lost=True,
        )

    # -- execution -----------------------------------------------------------

    def acquire(self) -> Claim:
        """Reserve the session for one execution; :class:`SessionBusy` if one is
        running, :class:`SessionEnded` if the session has ended."""
        if self.ended.is_set() or self._stop.is_set() or self.computer is None:
            raise SessionEnded(self.id)
        try:
            self._busy.acquire_nowait()
        except anyio.WouldBlock:
            raise SessionBusy(self.id) from None
        self.touch()
        if self.on_state is not None:
            self.on_state(self)
        return Claim(self)

    def _release(self) -> None:
        self._busy.release()
        self.touch()
        if self.on_state is not None:
            self.on_state(self)

    def stream(
        self, message: Message, timeout: float | None, claim: Claim
    ) -> AsyncGenerator[Message, None]:
        """Run ``message`` under ``claim``; yield and record its replies
        (:func:`~lmc_runtime.service.execution.recorded_run`)."""
        return recorded_run(self, message, timeout, claim)


async def _warm(computer: Computer) -> None:
    """Start the Python kernel now and wait until it answers (raises if it cannot):
    no code runs, so the client's first execution is the kernel's first."""
    await computer.astart("python")
