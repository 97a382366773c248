"""The one interface of a computer: :class:`ComputerLike`.

:class:`~lmc_runtime.Computer` (code runs on this machine) and
:class:`~lmc_runtime.remote.RemoteComputer` (code runs in a session of an
``lmc serve``) both implement it, and everything that drives a computer (the
agent loop, the framework integrations, the MCP server, the REPL) takes a
``ComputerLike``, so that either one fits::

    from lmc_runtime import ComputerLike

    def first_line(computer: ComputerLike, code: str) -> str:
        for message in computer.run("python", code):
            if message.type == "console" and message.format == "output":
                return str(message.content).splitlines()[0]
        return ""

The protocol is ``runtime_checkable``: ``isinstance(obj, ComputerLike)`` tells
whether ``obj`` has every member (not their signatures, which mypy checks).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator, Mapping
from typing import Protocol, Self, Unpack, runtime_checkable

from .arguments import MessageInput, RunOptions
from .backends.checkpoints import CheckpointInfo
from .language_status import LanguageStatus
from .messages import Message

__all__ = ["BranchingLike", "ComputerLike"]


@runtime_checkable
class ComputerLike(Protocol):
    """What a computer does, wherever its code runs: run code and stream its
    messages back, stop or restart an interpreter, name its languages, close.

    The async methods (``arun``, ``ainterrupt``, ``arestart``, ``aclose``) are
    for a computer opened by ``async with``; the sync ones (``run``,
    ``interrupt``, ``restart``, ``close``) open it on first use and drive it
    from a thread of its own.
    """

    @property
    def languages(self) -> Mapping[str, LanguageStatus]:
        """Every language it knows, by name: whether it runs here, and if not, why."""
        ...

    def resolve(self, language: str) -> str | None:
        """The name of the language ``language`` names or is an alias of (in any
        case), or None if it knows no such language."""
        ...

    def arun(
        self, message: MessageInput, code: str | None = None, **options: Unpack[RunOptions]
    ) -> AsyncGenerator[Message, None]:
        """Execute one code message; its computer-role messages as they come."""
        ...

    def run(
        self, message: MessageInput, code: str | None = None, **options: Unpack[RunOptions]
    ) -> Iterator[Message]:
        """The sync form of :meth:`arun`."""
        ...

    async def ainterrupt(self, language: str | None = None) -> None:
        """Interrupt the running code (in ``language`` only, if given and the
        computer can tell its languages apart); the state is kept."""
        ...

    def interrupt(self, language: str | None = None) -> None:
        """The sync form of :meth:`ainterrupt`; safe to call from any thread."""
        ...

    async def arestart(self, language: str) -> None:
        """Start ``language``'s interpreter over; its state is lost."""
        ...

    def restart(self, language: str) -> None:
        """The sync form of :meth:`arestart`."""
        ...

    async def __aenter__(self) -> Self:
        """Open it: ``async with computer:``."""
        ...

    async def __aexit__(self, *exc_info: object) -> None:
        """Close it, as :meth:`aclose` does."""
        ...

    async def aclose(self) -> None:
        """Shut down its interpreters (or its remote session); it cannot open again."""
        ...

    def close(self) -> None:
        """The sync form of :meth:`aclose`."""
        ...


@runtime_checkable
class BranchingLike(Protocol):
    """A computer whose Python state can be checkpointed, rolled back and forked:
    :class:`~lmc_runtime.Computer` (a frozen copy of the local kernel) and
    :class:`~lmc_runtime.remote.RemoteComputer` (the service's checkpoints, which
    also keep and restore the session's working directory, and its fork, a new
    session). A checkpoint id unknown or gone raises
    :class:`~lmc_runtime.errors.CheckpointNotFound`; a language or a place where
    checkpoints cannot be kept, :class:`~lmc_runtime.errors.CheckpointsUnsupported`."""

    async def acheckpoint(self, language: str = "python") -> str:
        """Freeze a copy of ``language``'s interpreter state; the checkpoint's id."""
        ...

    def checkpoint(self, language: str = "python") -> str:
        """The sync form of :meth:`acheckpoint`."""
        ...

    async def arollback(self, checkpoint_id: str) -> None:
        """Make the interpreter's state the checkpoint's; the checkpoint stays."""
        ...

    def rollback(self, checkpoint_id: str) -> None:
        """The sync form of :meth:`arollback`."""
        ...

    async def acheckpoints(self) -> list[CheckpointInfo]:
        """Every checkpoint kept, with what it costs."""
        ...

    def checkpoints(self) -> list[CheckpointInfo]:
        """The sync form of :meth:`acheckpoints`."""
        ...

    async def acheckpoint_info(self, checkpoint_id: str) -> CheckpointInfo:
        """One checkpoint, as :meth:`acheckpoints` lists it."""
        ...

    def checkpoint_info(self, checkpoint_id: str) -> CheckpointInfo:
        """The sync form of :meth:`acheckpoint_info`."""
        ...

    async def adrop_checkpoint(self, checkpoint_id: str) -> None:
        """End the checkpoint and forget it."""
        ...

    def drop_checkpoint(self, checkpoint_id: str) -> None:
        """The sync form of :meth:`adrop_checkpoint`."""
        ...

    async def afork(self, language: str = "python") -> Self:
        """A new, open computer with this one's state; independent from then on."""
        ...

    def fork(self, language: str = "python") -> Self:
        """The sync form of :meth:`afork`."""
        ...
