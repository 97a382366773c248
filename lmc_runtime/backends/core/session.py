"""A session and a backend on the core: runs take turns, each first saying what
happened since the last (a death nobody saw, late output)."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import ClassVar

import anyio
from anyio.abc import TaskGroup

from ...messages import Message
from ..base import Availability, ExecutionOptions, SessionSettings
from .execution import Execution
from .interpreter import Interpreter
from .route import Route
from .supervisor import Supervisor
from .turns import Turns

__all__ = ["SupervisedBackend", "SupervisedSession"]


class SupervisedSession:
    """One interpreter at a time (replaced when it dies), running code in turns."""

    def __init__(self, supervisor: Supervisor, execution: type[Execution] = Execution) -> None:
        self.supervisor = supervisor
        self._execution = execution
        self._turns: Turns[Execution] = Turns(supervisor.start_soon)
        self._keys = itertools.count(1)

    async def _news(self, options: ExecutionOptions) -> AsyncGenerator[Message, None]:
        """News from between runs; returns once the interpreter is settled."""
        while True:
            await self.supervisor.ensure_ready()
            for message in self.supervisor.news(options.reply_to):
                yield message
            # Checked, then the run is sent with no await in between that could
            # let a restart slip in after the news went out.
            if self.supervisor.settled:
                return

    def execute(self, code: str, options: ExecutionOptions) -> AsyncGenerator[Message, None]:
        async def begin(free: Callable[[], None]) -> Execution:
            route = self.route(next(self._keys), options.reply_to)
            run = self._execution(self.supervisor, route, options)
            run.on_finished = free
            await self.supervisor.submit(route, code, options)
            return run

        return self._turns.take(lambda: self._news(options), begin)

    def route(self, key: object, tag: str) -> Route:
        return Route(key, tag)

    async def interrupt(self) -> None:
        await self._turns.interrupt()

    async def restart(self) -> None:
        await self.supervisor.restart()

    async def aclose(self) -> None:
        await self.supervisor.shutdown()


class SupervisedBackend:
    """A backend whose sessions run one interpreter under a :class:`Supervisor`:
    subclasses implement :meth:`availability` and :meth:`interpreter`, and set
    ``who`` (how notices name it) and ``execution``."""

    who: ClassVar[str] = "the interpreter"
    execution: ClassVar[type[Execution]] = Execution
    session: ClassVar[type[SupervisedSession]] = SupervisedSession

    def availability(self) -> Availability:
        raise NotImplementedError

    def interpreter(self, settings: SessionSettings, env: Mapping[str, str]) -> Interpreter:
        """A fresh interpreter for one launch."""
        raise NotImplementedError

    def environment(self, settings: SessionSettings) -> dict[str, str]:
        """The interpreter's environment: this process's, then the caller's."""
        return {**os.environ, **settings.env}

    async def start(self, task_group: TaskGroup, settings: SessionSettings) -> SupervisedSession:
        settings.work_dir.mkdir(parents=True, exist_ok=True)
        env = self.environment(settings)
        supervisor = Supervisor(
            lambda: self.interpreter(settings, env), self.who, task_group, settings.timeouts
        )
        try:
            await supervisor.start()
        except BaseException:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await supervisor.shutdown()
            raise
        return self.session(supervisor, self.execution)
