"""The executor: LMC code messages in, computer-role messages out.

:class:`Computer` is async at its core. Its sessions' background tasks (one
reader per kernel, the process watchers) run in the task group it opens on
``async with``. The sync methods (``run``, ``interrupt``, ``restart``,
``close``, ``with``) drive the same core through an AnyIO blocking portal,
which runs the event loop in a helper thread.
"""

from __future__ import annotations

import contextlib
import logging
import math
import shutil
import tempfile
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import anyio
from anyio.abc import TaskGroup
from anyio.from_thread import BlockingPortal, start_blocking_portal

from . import replies
from .backends.base import ExecutionOptions, Launcher, Session, SessionSettings
from .backends.registry import Registry
from .config import InputCallback, Limits, Timeouts
from .errors import BackendError, UsageError
from .intake import MessageInput, Rejected, accept
from .messages import Message
from .output import within_budget
from .sessions import Sessions
from .sync import iterate_in_portal

__all__ = ["Computer", "LanguageStatus", "MessageInput"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LanguageStatus:
    """One language as ``Computer.languages`` reports it."""

    name: str
    available: bool
    reason: str | None
    aliases: tuple[str, ...]


class Computer:
    """Runs LMC code messages and streams computer-role messages back.

    Async use::

        async with Computer() as computer:
            async for message in computer.arun({"role": "assistant", "type": "code",
                                                "format": "python", "content": "print(1)"}):
                ...

    Sync use: ``for message in computer.run("python", "print(1)")``, then
    ``computer.close()`` (or ``with Computer() as computer:``).
    """

    def __init__(
        self,
        *,
        timeouts: Timeouts | None = None,
        limits: Limits | None = None,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        on_input: InputCallback | None = None,
        track_active_line: bool = True,
        registry: Registry | None = None,
        launcher: Launcher | None = None,
        work_dir: str | Path | None = None,
        shared_dir: str | Path | None = None,
    ) -> None:
        """``launcher`` wraps every interpreter's command line (a sandbox, limits).

        ``work_dir`` holds the runtime's own files (connection files, cells,
        FIFOs, logs); by default a fresh temporary directory, removed on close. A
        ``work_dir`` given here belongs to the caller and is left in place.
        ``shared_dir`` is where interpreters create files of their own (unix
        sockets, screenshots); by default the ``work_dir``. A sandbox gives a
        folder it can write there and keeps ``work_dir`` read-only to the code,
        so that the host never follows a path the code could have planted.
        """
        self.timeouts = timeouts or Timeouts()
        self.limits = limits or Limits()
        self.cwd = Path(cwd) if cwd is not None else Path.cwd()
        self.env = dict(env or {})
        self.on_input = on_input
        self.track_active_line = track_active_line
        self.registry = registry or Registry()
        self.launcher = launcher
        self._given_work_dir = Path(work_dir) if work_dir is not None else None
        self._shared_dir = Path(shared_dir) if shared_dir is not None else None
        self._sessions = Sessions(self._start_session)
        self._task_group: TaskGroup | None = None
        self._work_dir: Path | None = None
        self._stack: AsyncExitStack | None = None
        self._sync: ExitStack | None = None
        self._portal: BlockingPortal | None = None
        self._closed = False

    # -- languages -----------------------------------------------------------

    @property
    def languages(self) -> dict[str, LanguageStatus]:
        """Every known language, whether it can run here, and if not, why."""
        result = {}
        for name in self.registry:
            availability = self.registry.availability(name)
            result[name] = LanguageStatus(
                name, availability.available, availability.reason, self.registry.entry(name).aliases
            )
        return result

    # -- lifecycle -------------------------------------------------------------

    @asynccontextmanager
    async def _lifespan(self) -> AsyncIterator[None]:
        if self._closed:
            raise UsageError("this Computer is closed; create a new one")
        owned = self._given_work_dir is None
        if self._given_work_dir is None:
            self._work_dir = Path(tempfile.mkdtemp(prefix="lmc-"))
            # Removed even when a sync user never calls close().
            weakref.finalize(self, shutil.rmtree, self._work_dir, ignore_errors=True)
        else:
            self._work_dir = self._given_work_dir
            self._work_dir.mkdir(parents=True, exist_ok=True)
        try:
            async with anyio.create_task_group() as tg:
                self._task_group = tg
                try:
                    yield
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._sessions.close()
                    tg.cancel_scope.cancel()
        finally:
            self._task_group = None
            self._closed = True
            if owned:
                shutil.rmtree(self._work_dir, ignore_errors=True)

    async def __aenter__(self) -> Computer:
        if self._stack is not None or self._portal is not None:
            raise UsageError("this Computer is already open")
        stack = AsyncExitStack()
        await stack.enter_async_context(self._lifespan())
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Shut down every session and the processes they started."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()
        self._closed = True

    # -- execution -------------------------------------------------------------

    async def arun(
        self, message: MessageInput, code: str | None = None, *, timeout: float | None = None
    ) -> AsyncGenerator[Message, None]:
        """Execute one code message; yield the computer's messages as they come.

        Anything that cannot run (malformed, not code, unknown or unavailable
        language) is answered with a "not understood" message; nothing raises
        into the caller's loop except misuse of a closed Computer.
        """
        if self._task_group is None:
            raise UsageError("open the Computer first: `async with Computer() as computer:`")
        if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
            raise UsageError(
                f"timeout must be a positive number of seconds or None, not {timeout!r}"
            )
        try:
            request = accept(message, code, self.registry)
        except Rejected as rejected:
            yield rejected.reply
            return
        name, reply_to = request.language, request.reply_to
        if name not in self._sessions:  # a running session needs no second look
            availability = self.registry.availability(name)
            if not availability.available:
                yield replies.not_understood(
                    f"{name} is not available here: {availability.reason}",
                    reply_to,
                    status="unavailable",
                )
                return
        options = ExecutionOptions(
            reply_to=reply_to,
            timeout=timeout if timeout is not None else self.timeouts.execution,
            interrupt_grace=self.timeouts.interrupt_grace,
            input_timeout=self.timeouts.input,
            on_input=self.on_input,
            track_lines=self.track_active_line,
        )
        try:
            session = await self._sessions.get(name)
            if session is None:
                yield replies.notice(
                    "Execution was interrupted before it started; nothing ran.",
                    "interrupted",
                    reply_to,
                    state_lost=False,
                )
                yield replies.active_line(None, reply_to, status="interrupted", state_lost=False)
                return
            # Closed here, at once, when the caller stops early: the session's
            # own stream then stops the code, instead of whenever it is collected.
            async with contextlib.aclosing(
                within_budget(session.execute(request.code, options), self.limits, reply_to)
            ) as outs:
                async for out in outs:
                    yield out
        except BackendError as exc:
            yield replies.notice(f"the {name} backend failed: {exc}", "backend_error", reply_to)
            yield replies.active_line(None, reply_to, status="backend_error")
        except Exception as exc:
            logger.exception("internal error while running %s code", name)
            yield replies.notice(
                f"internal error in lmc-runtime: {exc!r}", "backend_error", reply_to
            )
            yield replies.active_line(None, reply_to, status="backend_error")

    async def _start_session(self, name: str) -> Session:
        assert self._task_group is not None and self._work_dir is not None
        settings = SessionSettings(
            cwd=self.cwd,
            work_dir=self._work_dir / name,
            shared_dir=self._shared_dir,
            env=self.env,
            timeouts=self.timeouts,
            launcher=self.launcher,
        )
        return await self.registry.get(name).start(self._task_group, settings)

    async def ainterrupt(self, language: str | None = None) -> None:
        """Interrupt running code (in ``language`` only, if given)."""
        name = self.registry.resolve(language) if language else None
        if language and name is None:
            raise UsageError(f"unknown language {language!r}")
        await self._sessions.interrupt(name)

    async def arestart(self, language: str) -> None:
        """Restart ``language``'s session; its state is lost."""
        name = self.registry.resolve(language)
        if name is None:
            raise UsageError(f"unknown language {language!r}")
        await self._sessions.restart(name)

    # -- the sync layer --------------------------------------------------------

    def _ensure_portal(self) -> BlockingPortal:
        if self._portal is None:
            if self._stack is not None:
                raise UsageError("this Computer is open in async code: use arun, not run")
            if self._closed:
                raise UsageError("this Computer is closed; create a new one")
            sync = ExitStack()
            self._portal = sync.enter_context(start_blocking_portal("asyncio"))
            sync.enter_context(self._portal.wrap_async_context_manager(self._lifespan()))
            self._sync = sync
        return self._portal

    def __enter__(self) -> Computer:
        self._ensure_portal()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def run(
        self, message: MessageInput, code: str | None = None, *, timeout: float | None = None
    ) -> Iterator[Message]:
        """The sync form of :meth:`arun`."""
        portal = self._ensure_portal()
        stream = self.arun(message, code, timeout=timeout)
        return iterate_in_portal(portal, stream, cancel_wait=self.timeouts.interrupt_grace + 5)

    def interrupt(self, language: str | None = None) -> None:
        """The sync form of :meth:`ainterrupt`; safe to call from any thread."""
        if self._portal is not None:
            self._portal.call(self.ainterrupt, language)

    def restart(self, language: str) -> None:
        """The sync form of :meth:`arestart`."""
        self._ensure_portal().call(self.arestart, language)

    def close(self) -> None:
        """Shut everything down (the sync form of :meth:`aclose`)."""
        sync, self._sync, self._portal = self._sync, None, None
        if sync is not None:
            sync.close()
        self._closed = True
