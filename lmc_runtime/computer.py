"""The executor: LMC code messages in, computer-role messages out.

:class:`Computer` is async at its core. Its sessions' background tasks (one
reader per kernel, the process watchers) run in the task group it opens on
``async with``. The sync methods (``run``, ``interrupt``, ``restart``,
``close``, ``with``) drive the same core through an AnyIO blocking portal,
which runs the event loop in a helper thread.

What an execution yields passes through the Computer's declared ``filters``
(:mod:`lmc_runtime.filters`), in order: by default the output budget alone.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, aclosing
from os import PathLike
from pathlib import Path
from typing import Unpack

from anyio.abc import TaskGroup
from anyio.from_thread import BlockingPortal

from .arguments import MessageInput, RunOptions, check_run, registry_of
from .backends.base import Launcher, Session, SessionSettings
from .backends.registry import Registry
from .branching import Branching, mark_checkpoint
from .budget import BudgetFilter
from .config import InputCallback, Limits, Timeouts
from .errors import LMCError, UsageError
from .execution import admit, language_statuses, prepare, session_messages
from .filters import Filter, filtered
from .language_status import LanguageStatus
from .lifespan import Owned, close_dropped, lifespan
from .messages import Message
from .sessions import Sessions, weakly
from .sync import PortalHost, iterate_in_portal

__all__ = ["Computer", "LanguageStatus", "MessageInput", "RunOptions"]

logger = logging.getLogger(__name__)


class Computer(Branching, PortalHost):
    """Runs LMC code messages and streams computer-role messages back.

    Async use::

        async with Computer() as computer:
            async for message in computer.arun({"role": "assistant", "type": "code",
                                                "format": "python", "content": "print(1)"}):
                ...

    Sync use: ``for message in computer.run("python", "print(1)")``, then
    ``computer.close()`` (or ``with Computer() as computer:``). ``aclose`` and
    ``close`` shut down every session and the processes they started.
    """

    _noun = "Computer"

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
        filters: Sequence[Filter] | None = None,
        python: str | PathLike[str] | None = None,
        node: str | PathLike[str] | None = None,
        r: str | PathLike[str] | None = None,
        gateway_url: str | None = None,
        gateway_token: str | None = None,
        checkpoints: str | None = None,
        keep: int = 1,
    ) -> None:
        """``python``, ``node`` and ``r`` choose the interpreters code runs in: the
        user's own environment, with its packages. ``python`` is a path
        (``"/path/to/venv/bin/python"``) or an installed kernelspec's name; ``node``
        and ``r`` are paths or command names. An interpreter that lacks what the
        runtime needs (ipykernel, IRkernel) makes its language unavailable, and a
        run in it gets one reply saying what to install. They build the default
        registry, so they do not go with ``registry=``.

        ``gateway_url`` (``http(s)://host:port``) runs Python and R kernels on a
        Jupyter Kernel Gateway or Enterprise Gateway, with ``gateway_token`` (sent
        as ``Authorization: token ...``); without them, ``LMC_GATEWAY_URL`` and
        ``LMC_GATEWAY_TOKEN`` if set. ``python=`` or ``r=`` keeps that language here.
        ``launcher`` wraps every interpreter's command line (a sandbox, limits).
        ``filters`` is what every execution's messages pass through, in order (see
        :mod:`lmc_runtime.filters`); by default the output budget (a list replaces it).

        ``work_dir`` holds the runtime's own files (connection files, cells, FIFOs,
        logs); by default a fresh temporary directory, removed on close (one given
        is the caller's, left in place). ``shared_dir`` is where interpreters make
        files of their own (sockets, screenshots); by default the ``work_dir``. A
        sandbox gives a folder it can write there and keeps ``work_dir`` read-only,
        so the host never follows a path the code could have planted.

        ``checkpoints="every_run"``: a checkpoint before every run, the last ``keep``
        kept, named by ``extras["checkpoint"]`` (see :mod:`lmc_runtime.branching`)."""
        self._init_branching(checkpoints, keep)
        self.timeouts = timeouts or Timeouts()
        self.limits = limits or Limits()
        self.cwd = Path(cwd) if cwd is not None else Path.cwd()
        self.env = dict(env or {})
        self.on_input = on_input
        self.track_active_line = track_active_line
        self.registry = registry_of(registry, python, node, r, gateway_url, gateway_token)
        self.launcher = launcher
        self.filters: tuple[Filter, ...] = (BudgetFilter(),) if filters is None else tuple(filters)
        self._given_work_dir = Path(work_dir) if work_dir is not None else None
        self._shared_dir = Path(shared_dir) if shared_dir is not None else None
        self._sessions = Sessions(weakly(self._start_session))
        self._task_group: TaskGroup | None = None
        self._work_dir: Path | None = None
        self._spill_dir: Path | None = None
        self._owned: Owned | None = None

    # -- languages -----------------------------------------------------------

    @property
    def languages(self) -> dict[str, LanguageStatus]:
        """Every known language, whether it can run here, and if not, why."""
        return language_statuses(self.registry)

    def resolve(self, language: str) -> str | None:
        """The name of the language ``language`` names or is an alias of (in any
        case), or None if there is no such language."""
        return self.registry.resolve(language)

    def _known(self, language: str) -> str:
        """The name of ``language``; a :class:`UsageError` if there is no such language."""
        name = self.registry.resolve(language)
        if name is None:
            raise UsageError(f"unknown language {language!r}")
        return name

    @property
    def spill_dir(self) -> Path | None:
        """Where whole outputs cut by the budget are saved: ``limits.spill_dir`` if
        given, else this Computer's own folder, removed with everything in it on close."""
        return self.limits.spill_dir or self._spill_dir

    # -- lifecycle -------------------------------------------------------------

    def _lifespan(self) -> AbstractAsyncContextManager[None]:
        if self._closed:
            raise UsageError("this Computer is closed; create a new one")
        # The lifespan refers to the Computer weakly: one dropped unclosed is collected.
        spill = self.limits.spill_dir is None
        return lifespan(weakref.ref(self), self._sessions, self._given_work_dir, spill)

    def _opened(self, owned: Owned, task_group: TaskGroup | None) -> None:
        """The lifespan's news: open with ``task_group`` and ``owned``, or closed (None)."""
        self._owned, self._work_dir, self._spill_dir = owned, owned.work_dir, owned.spill_dir
        self._task_group = task_group
        self._closed = task_group is None

    def _opened_group(self) -> TaskGroup:
        """The open Computer's task group; a :class:`UsageError` if it is not open."""
        if self._task_group is None:
            raise UsageError("open the Computer first: `async with Computer() as computer:`")
        return self._task_group

    def _ensure_portal(self) -> BlockingPortal:
        opened = self._portal is None
        portal = super()._ensure_portal()
        if opened and self._sync is not None:
            # Dropped unclosed, it is closed once collected (at exit, its lifeline ends all).
            weakref.finalize(self, close_dropped, self._sync).atexit = False
        return portal

    # -- execution -------------------------------------------------------------

    def arun(
        self, message: MessageInput, code: str | None = None, **options: Unpack[RunOptions]
    ) -> AsyncGenerator[Message, None]:
        """Execute one code message; yield the computer's messages as they come.

        ``message`` is an LMC code message (a dict or a :class:`Message`), a
        ``(language, code)`` tuple, or a language with ``code`` as the second
        argument. ``options`` are :class:`RunOptions`: ``timeout`` in seconds, and
        ``env``, variables for this execution only (on top of the message's
        ``extras.env``); the interpreter's environment is restored after it.

        Anything in the message that cannot run (malformed, not code, unknown or
        unavailable language) is answered with a "not understood" message. Misuse
        of the API (wrong argument types or values, a Computer that is not open)
        raises at once: :class:`~lmc_runtime.errors.UsageError`, a ``TypeError``
        or ``ValueError``.
        """
        self._opened_group()
        return self._arun(*check_run(message, code, options))

    async def _arun(
        self,
        message: MessageInput,
        code: str | None,
        timeout: float | None,
        env: dict[str, str],
    ) -> AsyncGenerator[Message, None]:
        assert self._task_group is not None
        request = admit(message, code, self.registry, self._sessions)
        if isinstance(request, Message):
            yield request
            return
        run = prepare(request, self, self._task_group, timeout, env)
        taken = await self._before_run(run.language)
        source = mark_checkpoint(session_messages(self._sessions, run), taken)
        # Closed here, at once, when the caller stops early: the session's own
        # stream then stops the code, instead of whenever it is collected.
        async with aclosing(filtered(self.filters, run, source)) as outs:
            async for out in outs:
                yield out

    async def _start_session(self, name: str) -> Session:
        assert self._task_group is not None and self._owned is not None
        settings = SessionSettings(
            cwd=self.cwd,
            work_dir=self._owned.work_dir / name,
            shared_dir=self._shared_dir,
            env=self.env,
            timeouts=self.timeouts,
            launcher=self.launcher,
            # A launcher whose processes end with this one needs no watcher (a sandbox's).
            lifeline=None if getattr(self.launcher, "supervises", False) else self._owned.lifeline,
            origin=self._origins.pop(name, None),
        )
        return await self.registry.get(name).start(self._task_group, settings)

    async def astart(self, language: str) -> None:
        """Start ``language``'s interpreter now, if it is not running, and wait until
        it answers; no code runs. Raises what a failed start raises
        (:class:`~lmc_runtime.errors.KernelStartError`, ...)."""
        self._opened_group()
        await self._sessions.get(self._known(language))

    async def ainterrupt(self, language: str | None = None) -> None:
        """Interrupt running code (in ``language`` only, if given)."""
        await self._sessions.interrupt(self._known(language) if language else None)

    async def arestart(self, language: str) -> None:
        """Restart ``language``'s session; its state is lost."""
        await self._sessions.restart(self._known(language))

    async def arestart_all(self, cleanup: Callable[[], Awaitable[None]] | None = None) -> None:
        """Stop every running interpreter, await ``cleanup``, start them again.

        Their state is lost. A language that fails to start again is logged and
        tried again by its next run.
        """
        running = [name for name in self.registry if name in self._sessions]
        await self._sessions.close()
        if cleanup is not None:
            await cleanup()
        for name in running:
            try:
                await self._sessions.get(name)
            except LMCError:
                logger.warning("starting the %s session again failed", name, exc_info=True)

    # -- the sync layer --------------------------------------------------------

    def run(
        self, message: MessageInput, code: str | None = None, **options: Unpack[RunOptions]
    ) -> Iterator[Message]:
        """The sync form of :meth:`arun`; misuse raises here, before anything runs."""
        portal = self._ensure_portal()
        stream = self.arun(message, code, **options)
        return iterate_in_portal(portal, stream, cancel_wait=self.timeouts.interrupt_grace + 5)

    def interrupt(self, language: str | None = None) -> None:
        """The sync form of :meth:`ainterrupt`; safe to call from any thread."""
        if self._portal is not None:
            self._portal.call(self.ainterrupt, language)

    def start(self, language: str) -> None:
        """The sync form of :meth:`astart`."""
        self._ensure_portal().call(self.astart, language)

    def restart(self, language: str) -> None:
        """The sync form of :meth:`arestart`."""
        self._ensure_portal().call(self.arestart, language)
