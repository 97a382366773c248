"""The sessions of the service: create, list, get, delete, capacity and shutdown."""

from __future__ import annotations

import contextlib
import logging
import os
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup, TaskStatus

from ..backends.registry import Registry
from ..egress.gateway import EgressGateway
from ..sandbox import SandboxPolicy
from ..sandbox.policy import shown_network
from .datadir import DataDirLock, recover_sessions
from .errors import (
    CapacityExceeded,
    ServiceUnavailable,
    SessionEnded,
    SessionLost,
    SessionNotFound,
    SessionStartFailed,
    ShuttingDown,
)
from .feed import SessionEvents
from .making import SessionMaker
from .models import CreateSession
from .pool import Pool
from .pools import Pools, default_policy, pool_maker
from .reaper import SessionReaper
from .replicas import issued_by
from .secret_sessions import secrets_policy, server_secrets
from .session import ServiceSession, service_gateway
from .session_request import checked_cwd, session_languages, session_policy
from .settings import ServiceSettings
from .transcript import Transcripts

if TYPE_CHECKING:
    from .metrics import ServiceMetrics

__all__ = ["SessionManager"]

logger = logging.getLogger(__name__)

#: How long a session may take to close before shutdown moves on.
_CLOSE_TIMEOUT = 30.0


class SessionManager:
    """Owns every session's task; sessions beyond ``max_sessions`` are refused."""

    def __init__(
        self,
        settings: ServiceSettings,
        transcripts: Transcripts,
        registry: Registry | None = None,
        metrics: ServiceMetrics | None = None,
    ) -> None:
        """``metrics``: where its sessions count their executions (the
        application sets it once it has the metrics, which read :meth:`states`)."""
        self.settings = settings
        self.transcripts = transcripts
        self.gateway = service_gateway(settings.gateway_url, settings.gateway_token)
        self.registry = registry or Registry(gateway=self.gateway)
        self.metrics = metrics
        self.sessions: dict[str, ServiceSession] = {}
        self.ended: OrderedDict[str, str] = OrderedDict()
        #: Sessions a predecessor on this data directory held when it stopped
        #: without a shutdown, and why they are lost.
        self.lost: OrderedDict[str, str] = OrderedDict()
        #: The secrets sessions may ask for, and their broker (None: the server has none).
        self.secrets = server_secrets(settings)
        #: Makes sessions, with what they share (the fork server, the disk images...).
        self.maker = SessionMaker(settings, transcripts, self.gateway, self.secrets)
        # Sessions start a few at a time, so that a burst of creations queues instead
        # of starving every kernel of CPU: one per core, or two when kernels are
        # forked (a forked start mostly waits for its sandbox's processes).
        forking = self.maker.forks is not None
        starts = max(1, os.cpu_count() or 1) * (2 if forking else 1)
        self.shutting_down = False
        self._starting = 0
        self._start_gate = anyio.Semaphore(starts)
        self._task_group: TaskGroup | None = None
        #: The data directory's lock, when the caller already holds it.
        self.data_lock: DataDirLock | None = None
        #: The egress gateway that serves sessions under a policy (the application sets it).
        self.egress: EgressGateway | None = None
        #: Warm sessions: of the default policy, and of each environment asked for.
        make = pool_maker(settings, starts, self._start_pooled, self._room)
        self.pools = Pools(default_policy(settings), make)
        #: The feed of ``GET /v1/events``: clients' sessions created, ended, busy or idle.
        self.events = SessionEvents()

    @property
    def sessions_dir(self) -> Path:
        return self.settings.data_dir / "sessions"

    @property
    def sandboxes(self) -> int:
        """Sessions that hold processes: clients', starting ones and the pool's."""
        return len(self.sessions) + self._starting + self.pools.ready_count + self.pools.starting

    def _room(self) -> bool:
        return not self.shutting_down and self.sandboxes < self.settings.max_sessions

    def states(self) -> Iterator[str]:
        """The state of every client's session, and ``pooled`` for each warm one."""
        for session in list(self.sessions.values()):
            yield session.state
        for _ in range(self.pools.ready_count):
            yield "pooled"

    # -- lifetime ----------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        """Hold the data directory, clean what a killed predecessor left in it,
        then run until cancelled (:meth:`shutdown` closes every session)."""
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        lock = self.data_lock or DataDirLock(self.settings.data_dir)
        if not lock.held:
            lock.acquire()
        # Once its stale sessions are cleaned: what this server's sessions hold of
        # the system (with or without the sandbox: disks, cgroups) is released
        # when it dies, even if nothing starts again here.
        reaper = SessionReaper(self.settings.data_dir)
        try:
            found = await recover_sessions(self.sessions_dir, self.transcripts)
            for name in found[-self.settings.ended_kept :]:
                self.lost[name] = f"{self._who} stopped without a shutdown while it ran"
            reaper.start()
            async with anyio.create_task_group() as tg:
                self._task_group = tg
                forks, disk_images = self.maker.forks, self.maker.disk_images
                if forks is not None:
                    tg.start_soon(forks.prepare)
                disk_bytes = default_policy(self.settings).limits.disk_bytes
                tg.start_soon(disk_images.prepare, disk_bytes)
                if self.settings.pool_ceiling:
                    self.pools.spawn = tg.start_soon
                    tg.start_soon(self.pools.default.run)
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._task_group = None
            self.pools.spawn = None
            if self.maker.forks is not None:
                with anyio.CancelScope(shield=True):
                    await self.maker.forks.aclose()
            self.maker.disk_images.close()
            lock.release()
            with anyio.CancelScope(shield=True):
                await reaper.aclose()

    async def shutdown(self) -> None:
        """Stop every session and wait (bounded) until their processes are gone."""
        self.shutting_down = True
        everyone = list(self.sessions.values()) + self.pools.drain()
        for session in everyone:
            session.stop("the service is shutting down", "closed")
        with anyio.move_on_after(_CLOSE_TIMEOUT) as scope:
            for session in everyone:
                await session.closed.wait()
        if scope.cancelled_caught:
            logger.error("some sessions did not close within %g s", _CLOSE_TIMEOUT)

    # -- sessions ----------------------------------------------------------

    def _new(
        self, policy: SandboxPolicy, languages: list[str], *, pooled: bool, cwd: str = ""
    ) -> ServiceSession:
        return self.maker.new(
            *(policy, languages),
            pooled=pooled,
            cwd=cwd,
            egress=self.egress,
            metrics=self.metrics,
            on_state=self._state_changed,
        )

    def _state_changed(self, session: ServiceSession) -> None:
        if session.id in self.sessions:  # a client's, not a warm one
            self.events.publish("state", session)

    async def _launch(self, session: ServiceSession, *, warm: bool) -> None:
        if self._task_group is None:
            raise ServiceUnavailable("the service is not running")
        await self._task_group.start(self._life, session, warm)
        await session.ready.wait()

    async def _life(
        self, session: ServiceSession, warm: bool, *, task_status: TaskStatus[None]
    ) -> None:
        await session.run(warm=warm, gate=self._start_gate, task_status=task_status)
        if self.secrets is not None:
            self.secrets.close(session.id)
        if self.sessions.pop(session.id, None) is not None:
            self.ended[session.id] = session.end_reason or "it was closed"
            while len(self.ended) > self.settings.ended_kept:
                self.ended.popitem(last=False)
            self.events.publish("ended", session)
        self.pools.wake()

    async def _start_pooled(self, policy: SandboxPolicy) -> ServiceSession:
        session = self._new(policy, ["python"], pooled=True)
        await self._launch(session, warm=True)
        return session

    async def create(self, request: CreateSession) -> ServiceSession:
        """A new session, from the pool when it fits (past ``max_sessions``: 429)."""
        if self.shutting_down:
            raise ShuttingDown()
        policy = session_policy(self.settings, request)
        policy = secrets_policy(self.secrets, policy, request.secrets)
        languages = session_languages(self.registry, request.languages)
        cwd = checked_cwd(request.cwd)
        pool = self.pools.for_policy(policy, cwd)
        with pool.serving() if pool is not None else contextlib.nullcontext():
            return await self.open_session(policy, languages, cwd, pool=pool, title=request.title)

    async def open_session(
        self,
        policy: SandboxPolicy,
        languages: list[str],
        cwd: str,
        *,
        pool: Pool | None = None,
        title: str = "",
        extra: dict[str, object] | None = None,
    ) -> ServiceSession:
        """A client's session under a checked ``policy``, from ``pool`` if it has one."""
        if len(self.sessions) + self._starting >= self.settings.max_sessions:
            raise CapacityExceeded(self.settings.max_sessions)
        session = pool.take() if pool is not None else None
        if session is None and self.sandboxes >= self.settings.max_sessions:
            any(each.evict() for each in self.pools)  # a warm session gives up its room
        self._starting += 1
        try:
            if session is None:
                session = self._new(policy, languages, pooled=False, cwd=cwd)
                await self._launch(session, warm="python" in languages)
            else:
                session.languages = languages
            if session.start_error is not None:
                raise SessionStartFailed(session.id, session.start_error)
            session.claim(title)
            self.sessions[session.id] = session
        except BaseException:
            if session is not None and session.id not in self.sessions:
                session.stop("its creation was abandoned")
            raise
        finally:
            self._starting -= 1
        metadata = {
            "languages": languages,
            "network": shown_network(policy.network),
            "pooled": session.pooled,
            "cwd": cwd,
            "env": sorted(policy.env),
            "environment": policy.environment.name if policy.environment else None,
            **(extra or {}),
        }
        await self.transcripts.open(session.id, title=title, metadata=metadata)
        self.events.publish("created", session)
        return session

    @property
    def _who(self) -> str:
        replica = self.settings.replica
        return f"replica {replica}" if replica else "the server"

    def get(self, session_id: str) -> ServiceSession:
        """The live session ``session_id``; :class:`SessionEnded` saying why if it
        has ended; :class:`SessionLost` if a restart lost it (it was live when the
        server before on this data directory died, or it is this replica's id and
        unknown); :class:`SessionNotFound` if there never was one (or long ago)."""
        session = self.sessions.get(session_id)
        if session is not None and not session.ended.is_set():
            return session
        reason = self.ended.get(session_id) or (session.end_reason if session else None)
        if reason is not None:
            raise SessionEnded(session_id, reason)
        lost = self.lost.get(session_id)
        if lost is None and issued_by(session_id, self.settings.replica):
            lost = f"{self._who} restarted since it was created"
        if lost is not None:
            raise SessionLost(session_id, lost)
        raise SessionNotFound(session_id)

    async def delete(self, session_id: str) -> None:
        """End a session and wait until its processes are gone."""
        session = self.get(session_id)
        session.stop("it was deleted", "closed")
        with anyio.move_on_after(_CLOSE_TIMEOUT):
            await session.closed.wait()
