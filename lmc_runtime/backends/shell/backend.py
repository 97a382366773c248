"""The shell backends: bash, sh and zsh on a PTY; each picks its :class:`~.dialect.Dialect`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import ClassVar

from ..base import Availability, SessionSettings
from ..core import SupervisedBackend
from .dialect import BashDialect, Dialect, ShDialect, ZshDialect
from .execution import ShellExecution
from .interpreter import ShellInterpreter

__all__ = ["BashBackend", "ShBackend", "ShellBackend", "ZshBackend"]

#: Defaults for programs that would otherwise page or colour their output, and
#: for a virtualenv's ``activate``, which would otherwise set the prompt.
_QUIET_ENV = {
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "VIRTUAL_ENV_DISABLE_PROMPT": "1",
}


class ShellBackend(SupervisedBackend):
    """A shell on a PTY; subclasses pick the shell through their :class:`Dialect`."""

    who = "the shell"
    execution = ShellExecution
    dialect: ClassVar[Dialect] = ShDialect()

    def availability(self) -> Availability:
        if self.dialect.find() is None:
            return Availability.no(self.dialect.missing_reason())
        return Availability.yes()

    def environment(self, settings: SessionSettings) -> dict[str, str]:
        return {**os.environ, **_QUIET_ENV, **settings.env}

    def interpreter(self, settings: SessionSettings, env: Mapping[str, str]) -> ShellInterpreter:
        program = self.dialect.find() or self.dialect.program
        argv = settings.command(self.dialect.argv(program))
        return ShellInterpreter(self.dialect, argv, settings, env)


class BashBackend(ShellBackend):
    """bash, the default shell."""

    dialect = BashDialect()


class ShBackend(ShellBackend):
    """POSIX ``sh`` (dash on Debian)."""

    dialect = ShDialect()


class ZshBackend(ShellBackend):
    """zsh, when installed."""

    dialect = ZshDialect()
