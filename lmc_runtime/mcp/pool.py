"""One workspace per MCP session: opened on its first use, closed when the
session ends, when it has been idle too long, or when the server stops.

Each workspace lives in a task of its own (a Computer's task group is entered
and left in one task). Over stdio there is one session, the process's client;
over HTTP the session is the ``Mcp-Session-Id`` the SDK hands out, and the
HTTP layer reports its requests (:meth:`Workspaces.hold`) and its end
(:meth:`Workspaces.end`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator

import anyio
from anyio.abc import TaskGroup, TaskStatus

from ..errors import UsageError
from .workspace import Opener, Workspace

__all__ = ["Slot", "Workspaces"]

logger = logging.getLogger(__name__)


class Slot:
    """The workspace of one session, and its lifetime."""

    def __init__(self, key: str, idle: _Idle) -> None:
        self.key = key
        self._idle = idle
        self.workspace: Workspace | None = None
        self.error: BaseException | None = None
        self.ready = anyio.Event()
        self.closed = anyio.Event()
        self._stop = anyio.Event()
        self._running = anyio.Lock()

    @contextlib.asynccontextmanager
    async def claim(self) -> AsyncIterator[Workspace]:
        """Hold the workspace for one execution: one runs at a time, the next
        waits (also while a cancelled one is being stopped)."""
        async with self._running:
            self._idle.wake()
            try:
                if self.workspace is None:
                    raise UsageError("the workspace has closed")
                yield self.workspace
            finally:
                self._idle.wake()

    @property
    def executing(self) -> bool:
        return self._running.locked()

    def stop(self) -> None:
        self._stop.set()

    async def life(self, opener: Opener, *, task_status: TaskStatus[None]) -> None:
        """Open the workspace, keep it until stopped or idle, close it."""
        task_status.started()
        try:
            async with opener.open() as workspace:
                self.workspace = workspace
                self.ready.set()
                await self._idle.wait(self, self._stop)
        except Exception as exc:
            if self.ready.is_set():
                logger.exception("the workspace of MCP session %s failed", self.key)
            else:
                logger.warning("the workspace of MCP session %s did not open: %s", self.key, exc)
                self.error = exc
        finally:
            self.workspace = None
            self.ready.set()
            self.closed.set()


class _Idle:
    """How long a workspace may go unused, and what counts as use: the
    session's requests in flight (:meth:`Workspaces.hold`) and executions."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.active: dict[str, int] = {}
        self.changed = anyio.Event()

    def wake(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def wait(self, slot: Slot, stop: anyio.Event) -> None:
        """Return once ``stop`` is set or the slot has been idle for the timeout."""
        async with anyio.create_task_group() as tg:

            async def on_stop() -> None:
                await stop.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(on_stop)
            idle_since = anyio.current_time()
            while True:
                changed = self.changed
                if self.timeout is None or slot.executing or self.active.get(slot.key):
                    await changed.wait()
                    idle_since = anyio.current_time()
                    continue
                with anyio.move_on_at(idle_since + self.timeout):
                    await changed.wait()
                if not changed.is_set():
                    logger.info("closing the idle workspace of MCP session %s", slot.key)
                    tg.cancel_scope.cancel()
                    return


class Workspaces:
    """The workspaces of every MCP session of one server."""

    def __init__(self, opener: Opener, *, idle_timeout: float | None = None) -> None:
        self.opener = opener
        self._idle = _Idle(idle_timeout)
        self._slots: dict[str, Slot] = {}
        self._task_group: TaskGroup | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Workspaces]:
        """Serve workspaces while inside; on the way out close every one."""
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            try:
                yield self
            finally:
                self._task_group = None
                for slot in list(self._slots.values()):
                    slot.stop()

    async def get(self, key: str) -> Slot:
        """The open workspace of session ``key``, opened now if it has none; what
        stopped it from opening is raised."""
        slot = self._slots.get(key)
        if slot is None or slot.closed.is_set():
            if self._task_group is None:
                raise RuntimeError("the MCP server is not running")
            slot = self._slots[key] = Slot(key, self._idle)
            await self._task_group.start(self._life, slot)
        await slot.ready.wait()
        if slot.workspace is None:
            raise slot.error or RuntimeError("the workspace has closed")
        return slot

    async def _life(self, slot: Slot, *, task_status: TaskStatus[None]) -> None:
        try:
            await slot.life(self.opener, task_status=task_status)
        finally:
            if self._slots.get(slot.key) is slot:
                del self._slots[slot.key]

    def end(self, key: str) -> None:
        """Session ``key`` has ended: close its workspace (and stop its code)."""
        slot = self._slots.get(key)
        if slot is not None:
            slot.stop()

    @contextlib.contextmanager
    def hold(self, key: str) -> Iterator[None]:
        """A request of session ``key`` is in flight: its workspace is not idle."""
        active = self._idle.active
        active[key] = active.get(key, 0) + 1
        self._idle.wake()
        try:
            yield
        finally:
            active[key] -= 1
            if not active[key]:
                del active[key]
            self._idle.wake()
