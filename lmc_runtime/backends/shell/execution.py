"""One run in a shell: the shell's own rungs of the stop ladder, and its stdin.

An interrupt goes to the terminal's foreground process group (the job, or the
shell itself); a job that ignores it is killed while the shell keeps its state,
and the shell is interrupted with it, so that it runs nothing after the job (a
job killed is no interrupt to the shell); once the run is over, what is left of
an interrupted job goes too. While the shell itself runs the code (a loop of
builtins), the interrupt is sent again until the run ends: bash loses one now
and then (about one in ten, with a DEBUG trap set: the trap is cut short and the
loop goes on). A job's process that missed it (it came between the fork and the
``exec``, see :mod:`.interrupts`) gets it again too. Without an
input callback a cell reads ``/dev/null``; with one, a terminal of its own that
the core's feeder answers (see :mod:`.terminal`), or under a launcher (a sandbox,
whose /dev is its own) a FIFO, where ``read -p`` shows no prompt.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal

import anyio

from ...errors import KernelStartError
from ...messages import Message
from ...procs import signal_group
from ..base import ExecutionOptions
from ..core import (
    Execution,
    Finished,
    Gone,
    Route,
    StdinChannel,
    Supervisor,
    answers_fifo_reads,
)
from .interpreter import ShellInterpreter
from .interrupts import missed_interrupt
from .terminal import TerminalStdin

__all__ = ["ShellExecution"]

logger = logging.getLogger(__name__)

#: How long the shell itself may run on after an interrupt before it is sent again.
REINTERRUPT = 0.25
_JOB_KILLED = " It ignored the interrupt, so its foreground job was killed (SIGKILL)."


class ShellExecution(Execution):
    """A run on a :class:`ShellInterpreter`."""

    #: The line end a shell writes when an interrupt ends what it ran.
    stop_echo = "\n"

    def __init__(self, supervisor: Supervisor, route: Route, options: ExecutionOptions) -> None:
        super().__init__(supervisor, route, options)
        shell = supervisor.current
        if not isinstance(shell, ShellInterpreter) or not isinstance(route.key, int):
            raise KernelStartError("the shell is not running")
        self._shell = shell
        if answers_fifo_reads(options):
            path = shell.stdin_path(route.key)
            # A sandbox has a /dev of its own, where this process's terminals are not.
            own_dev = shell.launcher is not None
            self.stdin = StdinChannel.create(path) if own_dev else TerminalStdin.create(path)
            self.stdin_session = shell.pid
        #: The process groups interrupts went to, and the last one tried.
        self.stopped: set[int] = set()
        self._last: int | None = None
        self.job_killed = False

    @property
    def shell(self) -> ShellInterpreter:
        """The shell running this run: a new one if the run was sent again after the
        one it was sent to died before taking it (see :class:`~..core.Begun`)."""
        current = self.supervisor.current
        return current if isinstance(current, ShellInterpreter) else self._shell

    def reading_session(self) -> int:
        return self.shell.pid

    async def interrupt_code(self) -> None:
        """SIGINT to the terminal's foreground group; again if that group just ended."""
        for _ in range(3):
            group = self._last = self.shell.foreground_group()
            if signal_group(group, signal.SIGINT):
                self.stopped.add(group)
                return

    async def escalate(self) -> bool:
        """Interrupt again a job that began as the first interrupt came; SIGKILL
        a foreground job that ignores it (never the shell's own group)."""
        group = self.shell.foreground_group()
        if group != self._last:
            await self.interrupt_code()
            return True
        if group == self.shell.group:
            return False
        # First the shell, which waits for the job: it then goes back to its prompt.
        signal_group(self.shell.group, signal.SIGINT)
        self.job_killed = signal_group(group, signal.SIGKILL)
        return self.job_killed

    async def insist(self) -> None:
        """Interrupt the shell again while it still runs the code itself, and the
        processes of an interrupted job that missed it (a job that ignores the
        interrupt is :meth:`escalate`'s). Not the shell while its terminal holds
        unread output: that may be the prompt, and the run is then over."""
        shell, finished = self.shell, self.route.finished
        while not finished.is_set():
            with anyio.move_on_after(REINTERRUPT):
                await finished.wait()
            if finished.is_set():
                continue
            group = shell.foreground_group()
            if group != shell.group:
                if group in self.stopped:
                    await _interrupt_again(group, shell.group)
            elif not shell.output_pending():
                signal_group(shell.group, signal.SIGINT)

    def over(self) -> None:
        for group in self.stopped - {self.shell.group}:
            signal_group(group, signal.SIGKILL)  # children that ignored SIGINT

    def finish(self, done: Finished) -> list[Message]:
        if self.job_killed:
            done = dataclasses.replace(done, note=_JOB_KILLED)
        return super().finish(done)

    async def gone(self, gone: Gone) -> list[Message]:
        messages = await super().gone(gone)
        final = messages[-1]
        final.extras = {**(final.extras or {}), "execution_count": self.route.key}
        return messages


async def _interrupt_again(group: int, shell: int) -> None:
    """SIGINT again to each process of the interrupted job ``group`` that missed it;
    ``shell``: the shell's process (the leader of its own group)."""
    for pid in await anyio.to_thread.run_sync(missed_interrupt, group, shell):
        logger.info("process %d of an interrupted job missed the interrupt: sent again", pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGINT)
