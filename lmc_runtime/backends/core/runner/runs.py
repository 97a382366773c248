"""A run on a :class:`~.process.RunnerInterpreter`: stopped by naming it to the runner.

A stop is a request on the control FIFO that names the run, so it can never
stop a later one. It is asked again every :data:`REINTERRUPT` seconds until the
runner reports the run over (:meth:`RunnerExecution.again`); from then on the
write end of the code's stdin is closed, so a read the code waits in returns
end-of-input and the stop lands.
"""

from __future__ import annotations

import logging

import anyio

from ....messages import Message
from ...base import ExecutionOptions
from ..execution import Execution
from ..items import Finished
from ..route import Route
from ..stdin import StdinChannel
from ..supervisor import Supervisor
from .process import RunnerInterpreter

__all__ = ["REINTERRUPT", "RunnerExecution"]

logger = logging.getLogger(__name__)

#: How often a stop is asked again until the runner says the run is over.
REINTERRUPT = 0.2


class RunnerExecution(Execution):
    """A run on a runner; with an input callback it holds the write end of the code's stdin."""

    def __init__(self, supervisor: Supervisor, route: Route, options: ExecutionOptions) -> None:
        super().__init__(supervisor, route, options)
        runner = supervisor.current
        #: The runner this run went to.
        self.runner = runner if isinstance(runner, RunnerInterpreter) else None
        if self.runner is not None and self.answers_reads():
            try:
                self.stdin = StdinChannel.writer(self.runner.stdin_path)
            except OSError:  # the runner is gone: its watcher says so
                logger.info("%s's stdin could not be opened", self.who, exc_info=True)

    def answers_reads(self) -> bool:
        """Whether the code's reads of its stdin get answers (else they get end-of-input)."""
        return self.options.on_input is not None

    async def interrupt_code(self) -> None:
        runner = self.runner
        if runner is None or runner is not self.supervisor.current:
            await super().interrupt_code()
        else:
            await runner.stop(self.route)

    async def again(self, runner: RunnerInterpreter) -> None:
        """The stop asked again, while the run goes on."""
        await runner.stop(self.route)

    def finish(self, done: Finished) -> list[Message]:
        """The run is over, stopped or not: a read of the code's stdin left waiting (a
        readline question of a stopped run) gets end-of-input now, before the next run
        opens the write end again, instead of taking that run's answers."""
        if self.stdin is not None:
            self.stdin.close()
        return super().finish(done)

    async def insist(self) -> None:
        target, finished = self.supervisor.current, self.route.finished
        while target is not None and not finished.is_set():
            with anyio.move_on_after(REINTERRUPT):
                await finished.wait()
            if finished.is_set() or target is not self.supervisor.current:
                continue
            if isinstance(target, RunnerInterpreter):
                await self.again(target)
            if self.stdin is not None:
                self.stdin.close()
