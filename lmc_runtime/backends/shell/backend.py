"""The shell backends: bash (``shell``, ``bash``), ``sh`` and ``zsh``."""

from __future__ import annotations

from anyio.abc import TaskGroup

from ..base import Availability, SessionSettings
from .dialect import BashDialect, Dialect, ShDialect, ZshDialect
from .session import ShellSession

__all__ = ["BashBackend", "ShBackend", "ShellBackend", "ZshBackend"]


class ShellBackend:
    """A shell on a PTY; subclasses pick the shell through their :class:`Dialect`."""

    name = "shell"
    aliases: tuple[str, ...] = ()
    dialect: Dialect = ShDialect()

    def availability(self) -> Availability:
        if self.dialect.find() is None:
            return Availability.no(self.dialect.missing_reason())
        return Availability.yes()

    async def start(self, task_group: TaskGroup, settings: SessionSettings) -> ShellSession:
        program = self.dialect.find() or self.dialect.program
        session = ShellSession(self.name, self.dialect, program, settings, task_group)
        await session.start()
        return session


class BashBackend(ShellBackend):
    """bash, the default shell."""

    name = "shell"
    aliases = ("bash",)
    dialect = BashDialect()


class ShBackend(ShellBackend):
    """POSIX ``sh`` (dash on Debian)."""

    name = "sh"
    dialect = ShDialect()


class ZshBackend(ShellBackend):
    """zsh, when installed."""

    name = "zsh"
    dialect = ZshDialect()
