"""A backend whose sessions are a runner: the one way node's and Java's are built."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...base import SessionSettings
from ..execution import Execution
from ..session import SupervisedBackend
from .process import RunnerInterpreter
from .runs import RunnerExecution

__all__ = ["RunnerBackend"]


class RunnerBackend(SupervisedBackend):
    """Sessions on a runner: subclasses say its command line (:meth:`runner_argv`), and
    may set ``runner`` (what its end means) and ``execution`` (how a run goes)."""

    runner: ClassVar[type[RunnerInterpreter]] = RunnerInterpreter
    execution: ClassVar[type[Execution]] = RunnerExecution

    def runner_argv(self) -> list[str]:
        """The runner's command line, before the session's launcher wraps it and the
        paths of its events and control FIFOs are added."""
        raise NotImplementedError

    def interpreter(self, settings: SessionSettings, env: Mapping[str, str]) -> RunnerInterpreter:
        return self.runner(self.runner_argv(), settings=settings, env=env, who=self.who)
