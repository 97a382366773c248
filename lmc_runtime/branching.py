"""Checkpoints, rollback and fork of a Computer's interpreters.

A session that can copy its interpreter implements
:class:`~lmc_runtime.backends.checkpoints.Checkpointing` (Python's, on a local
kernel); for any other, these methods raise
:class:`~lmc_runtime.errors.CheckpointsUnsupported`. Only the interpreter's
state is kept and restored: the Computer's working directory is its user's,
and a rollback leaves its files as they are.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from .backends.base import Launcher
from .backends.checkpoints import CheckpointInfo, Checkpointing, Origin
from .errors import ArgumentValueError, CheckpointNotFound, CheckpointsUnsupported, LMCError
from .messages import Message

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from anyio.from_thread import BlockingPortal

    from .backends.registry import Registry
    from .config import InputCallback, Limits, Timeouts
    from .filters import Filter
    from .sessions import Sessions

__all__ = ["EVERY_RUN", "Branching"]

logger = logging.getLogger(__name__)

#: ``Computer(checkpoints=EVERY_RUN)``: a checkpoint before every run.
EVERY_RUN = "every_run"


class Branching:
    """The checkpoint methods of :class:`~lmc_runtime.computer.Computer`."""

    if TYPE_CHECKING:  # what they use of the Computer

        def __init__(self, **options: Any) -> None: ...

        _sessions: Sessions
        registry: Registry
        timeouts: Timeouts
        limits: Limits
        cwd: Path
        env: dict[str, str]
        on_input: InputCallback | None
        track_active_line: bool
        launcher: Launcher | None
        filters: tuple[Filter, ...]

        async def __aenter__(self) -> Self: ...
        def _known(self, language: str) -> str: ...
        def _opened_group(self) -> TaskGroup: ...
        def _ensure_portal(self) -> BlockingPortal: ...
        async def astart(self, language: str) -> None: ...
        def start(self, language: str) -> None: ...
        async def aclose(self) -> None: ...
        def close(self) -> None: ...

    def _init_branching(self, checkpoints: str | None, keep: int) -> None:
        if checkpoints not in (None, EVERY_RUN):
            raise ArgumentValueError(f"checkpoints must be None or {EVERY_RUN!r}")
        if keep < 1:
            raise ArgumentValueError("keep must be at least 1")
        self.every_run = checkpoints == EVERY_RUN
        self.keep = keep
        #: Each checkpoint's language, by id; the automatic ones, oldest first.
        self._checkpoint_languages: dict[str, str] = {}
        self._automatic: list[str] = []
        #: The checkpoint a fork's first interpreter starts from, by language.
        self._origins: dict[str, Origin] = {}

    async def _checkpointing(self, language: str) -> Checkpointing:
        name = self._known(language)
        self._opened_group()
        session = await self._sessions.get(name)
        if session is None:
            raise CheckpointsUnsupported(f"the {name} session was interrupted while it started")
        if not isinstance(session, Checkpointing):
            raise CheckpointsUnsupported(f"checkpoints are not supported for {name}")
        return session

    async def _session_of(self, checkpoint_id: str) -> Checkpointing:
        language = self._checkpoint_languages.get(checkpoint_id)
        if language is None:
            raise CheckpointNotFound(f"no checkpoint {checkpoint_id!r}")
        return await self._checkpointing(language)

    async def acheckpoint(self, language: str = "python") -> str:
        """Freeze a copy of ``language``'s interpreter state; the checkpoint's id.
        Taken between runs (it waits for a run under way to end)."""
        session = await self._checkpointing(language)
        info = await session.checkpoint()
        self._checkpoint_languages[info.id] = info.language
        return info.id

    async def arollback(self, checkpoint_id: str) -> None:
        """Make the interpreter's state the checkpoint's (a run under way is ended);
        the checkpoint stays, for another rollback. The first run after it says
        what the checkpoint could not carry (threads, subprocesses, sockets)."""
        session = await self._session_of(checkpoint_id)
        await session.rollback(checkpoint_id)

    async def adrop_checkpoint(self, checkpoint_id: str) -> None:
        """End the checkpoint's frozen process and forget it."""
        session = await self._session_of(checkpoint_id)
        await session.drop_checkpoint(checkpoint_id)
        self._checkpoint_languages.pop(checkpoint_id, None)
        if checkpoint_id in self._automatic:
            self._automatic.remove(checkpoint_id)

    async def acheckpoints(self) -> list[CheckpointInfo]:
        """:meth:`checkpoints`, for the async interface shared with ``RemoteComputer``."""
        return self.checkpoints()

    async def acheckpoint_info(self, checkpoint_id: str) -> CheckpointInfo:
        """:meth:`checkpoint_info`, for the async interface shared with ``RemoteComputer``."""
        return self.checkpoint_info(checkpoint_id)

    def checkpoint_info(self, checkpoint_id: str) -> CheckpointInfo:
        """One checkpoint, as :meth:`checkpoints` lists it; only its own process's
        memory is read. :class:`~lmc_runtime.errors.CheckpointNotFound` if unknown."""
        language = self._checkpoint_languages.get(checkpoint_id)
        session = self._sessions.running(language) if language is not None else None
        if not isinstance(session, Checkpointing):
            raise CheckpointNotFound(f"no checkpoint {checkpoint_id!r}")
        return session.checkpoint_info(checkpoint_id)

    def checkpoints(self) -> list[CheckpointInfo]:
        """Every checkpoint kept, with the private memory its frozen process holds."""
        found: list[CheckpointInfo] = []
        for name in dict.fromkeys(self._checkpoint_languages.values()):
            session = self._sessions.running(name)
            if isinstance(session, Checkpointing):
                found.extend(session.checkpoints())
        return found

    async def afork(self, language: str = "python") -> Self:
        """A new, open Computer whose ``language`` interpreter has this one's state;
        the two are independent from then on. Close it with ``aclose``."""
        taken = await self.acheckpoint(language)
        other = self._sibling()
        try:
            session = await self._session_of(taken)
            other._origins[self._known(language)] = session.origin(taken)
            await other.__aenter__()  # the caller's to close
            await other.astart(language)
        except BaseException:
            await other.aclose()
            raise
        finally:
            await self.adrop_checkpoint(taken)
        return other

    def _sibling(self) -> Self:
        """A new Computer made as this one was (its own folders)."""

        return type(self)(
            timeouts=self.timeouts,
            limits=self.limits,
            cwd=self.cwd,
            env=self.env,
            on_input=self.on_input,
            track_active_line=self.track_active_line,
            registry=self.registry,
            launcher=self.launcher,
            filters=self.filters,
            checkpoints=EVERY_RUN if self.every_run else None,
            keep=self.keep,
        )

    async def _before_run(self, language: str) -> str | None:
        """With ``checkpoints="every_run"``: a checkpoint now, the oldest past ``keep`` dropped."""
        if not self.every_run or not isinstance(await self._sessions.get(language), Checkpointing):
            return None
        try:
            taken = await self.acheckpoint(language)
        except LMCError as exc:
            logger.warning("no checkpoint before the run: %s", exc)
            return None
        self._automatic.append(taken)
        while len(self._automatic) > self.keep:
            oldest = self._automatic[0]
            try:
                await self.adrop_checkpoint(oldest)
            except CheckpointNotFound:
                self._automatic.remove(oldest)
        return taken

    # -- the sync layer --------------------------------------------------------

    def checkpoint(self, language: str = "python") -> str:
        """The sync form of :meth:`acheckpoint`."""
        return self._ensure_portal().call(self.acheckpoint, language)

    def rollback(self, checkpoint_id: str) -> None:
        """The sync form of :meth:`arollback`."""
        self._ensure_portal().call(self.arollback, checkpoint_id)

    def drop_checkpoint(self, checkpoint_id: str) -> None:
        """The sync form of :meth:`adrop_checkpoint`."""
        self._ensure_portal().call(self.adrop_checkpoint, checkpoint_id)

    def fork(self, language: str = "python") -> Self:
        """The sync form of :meth:`afork`: the new Computer is used with the sync
        methods (``run``, ``close``)."""
        taken = self.checkpoint(language)
        other = self._sibling()
        try:
            session = self._ensure_portal().call(self._session_of, taken)
            other._origins[self._known(language)] = session.origin(taken)
            other.start(language)
        except BaseException:
            other.close()
            raise
        finally:
            self.drop_checkpoint(taken)
        return other


async def mark_checkpoint(
    messages: AsyncGenerator[Message, None], checkpoint_id: str | None
) -> AsyncGenerator[Message, None]:
    """``messages``, the run's final one (its ``active_line`` end with a status)
    carrying ``extras.checkpoint``: the checkpoint taken before the run.
    ``messages`` is closed with this (not left to the garbage collector, whose
    finalizer costs a task and a wakeup of the loop when a filter stops early)."""
    async with aclosing(messages):
        async for message in messages:
            if checkpoint_id is not None and _final(message):
                extras: dict[str, Any] = {**(message.extras or {}), "checkpoint": checkpoint_id}
                message = message.model_copy(update={"extras": extras})
            yield message


def _final(message: Message) -> bool:
    return (
        message.format == "active_line"
        and message.content is None
        and bool(message.extras)
        and "status" in (message.extras or {})
    )
