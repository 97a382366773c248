"""Where one MCP client's code runs: a local Computer, a sandboxed one, or a
session of a remote ``lmc serve``.

Each kind is an :class:`Opener`; opening it gives a :class:`Workspace`: the
computer that runs code and, for a sandbox or a remote session, the files of
its working directory. The kind is chosen once, when ``lmc mcp`` starts.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..computer import Computer
from ..computer_like import ComputerLike
from ..config import Timeouts
from ..sandbox import Sandbox, SandboxPolicy, SessionLimits
from .files import Files, RemoteFiles, SandboxFiles
from .outputs import OUTPUT_SCHEME, SavedOutputs

if TYPE_CHECKING:
    from ..options.interpreters import Interpreters

__all__ = [
    "LocalOpener",
    "Opener",
    "RemoteOpener",
    "SandboxOpener",
    "Workspace",
]


@dataclass(frozen=True)
class Workspace:
    """An open computer (local, sandboxed or remote), the files of its working
    directory when it has files of its own (a sandbox, a remote session), and
    the whole outputs its truncation notes name when it keeps them (a sandbox)."""

    computer: ComputerLike
    files: Files | None = None
    outputs: SavedOutputs | None = None


class Opener(Protocol):
    """One kind of workspace: how a new one is opened, whether it has files, and
    whether it keeps the whole outputs its notes name (``read_output``)."""

    @property
    def has_files(self) -> bool: ...

    @property
    def has_outputs(self) -> bool: ...

    def open(self) -> AbstractAsyncContextManager[Workspace]:
        """Yields an open workspace; closes everything it started on exit."""
        ...


@dataclass(frozen=True)
class LocalOpener:
    """A plain :class:`Computer` on this machine, as ``lmc run`` uses."""

    timeouts: Timeouts
    interpreters: Interpreters | None = None
    has_files: bool = field(default=False, init=False)
    #: A truncation note names a file of this machine, which the client can read.
    has_outputs: bool = field(default=False, init=False)

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Workspace]:
        chosen = self.interpreters or {"python": None, "node": None, "r": None}
        async with Computer(timeouts=self.timeouts, **chosen) as computer:
            yield Workspace(computer)


@dataclass(frozen=True)
class SandboxOpener:
    """A Computer in a sandbox of its own, as ``lmc serve`` gives each session:
    bubblewrap, limits, a private working directory under ``root``. A truncation
    note names the whole output as ``output://NAME``, which ``read_output`` reads."""

    root: Path
    limits: SessionLimits = field(default_factory=SessionLimits)
    timeouts: Timeouts | None = None
    has_files: bool = field(default=True, init=False)
    has_outputs: bool = field(default=True, init=False)

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Workspace]:
        sandbox = Sandbox(self.root / secrets.token_hex(8), SandboxPolicy(limits=self.limits))
        try:
            await sandbox.start()
            if self.timeouts is not None:
                opened = sandbox.computer(outputs_at=OUTPUT_SCHEME, timeouts=self.timeouts)
            else:
                opened = sandbox.computer(outputs_at=OUTPUT_SCHEME)
            async with opened as computer:
                files = SandboxFiles(sandbox.work_dir, sandbox.owner)
                yield Workspace(computer, files, SavedOutputs(sandbox.output_dir))
        finally:
            await sandbox.aclose()


@dataclass(frozen=True)
class RemoteOpener:
    """A session of a remote ``lmc serve``, through its client SDK."""

    url: str
    token: str | None
    languages: Sequence[str]
    execution_timeout: float | None = None
    has_files: bool = field(default=True, init=False)
    #: The server's notes name its own outputs route, which its clients fetch.
    has_outputs: bool = field(default=False, init=False)

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Workspace]:
        from ..remote import RemoteComputer, RemoteTimeouts

        remote = RemoteComputer(
            self.url,
            token=self.token,
            languages=list(self.languages),
            timeouts=RemoteTimeouts(execution=self.execution_timeout),
        )
        async with remote:
            yield Workspace(remote, RemoteFiles(remote))
