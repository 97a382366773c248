"""One run in a shell: the shell's own rungs of the stop ladder, and its stdin.

The core runs the deadline, the ladder, line pacing and the final message.
What is the shell's: an interrupt goes to the terminal's foreground process
group (the job running, or the shell itself); a job that ignores it is killed
while the shell keeps its state; once the run is over, what is left of the
interrupted job goes too. With an input callback, the feeder answers reads of
the run's stdin FIFO (see :mod:`.stdin`): once the output has gone quiet (any
output restarts the wait) it looks for a blocked reader, then again, twice as
long each time, up to a second.
"""

from __future__ import annotations

import dataclasses
import signal

import anyio

from ... import replies
from ...errors import KernelStartError
from ...messages import Message
from ..base import ExecutionOptions
from ..core import Execution, Finished, Gone, Output, Route, Supervisor
from ..core.procs import signal_group
from ..inputs import call_input
from ..turns import first_of
from .interpreter import ShellInterpreter
from .stdin import ShellRoute, StdinSource

__all__ = ["ShellExecution"]

#: Quiet time before the first look for a reader, and the longest wait between looks.
_QUIET = 0.1
_LONGEST = 1.0
_JOB_KILLED = " It ignored the interrupt, so its foreground job was killed (SIGKILL)."


class ShellExecution(Execution):
    """A run on a :class:`ShellInterpreter`, on a :class:`ShellRoute`."""

    def __init__(self, supervisor: Supervisor, route: Route, options: ExecutionOptions) -> None:
        super().__init__(supervisor, route, options)
        shell = supervisor.current
        if not isinstance(shell, ShellInterpreter) or not isinstance(route, ShellRoute):
            raise KernelStartError("the shell is not running")
        self.shell = shell
        self._route = route
        self.stdin = StdinSource(shell.work_dir, route.key, options.on_input is not None)
        route.stdin = self.stdin.path
        #: The process groups interrupts went to, and the last one tried.
        self.stopped: set[int] = set()
        self._last: int | None = None
        self.job_killed = False

    # -- the ladder ---------------------------------------------------------------

    async def interrupt_code(self) -> None:
        """SIGINT to the terminal's foreground group; again if that group just ended."""
        for _ in range(3):
            group = self._last = self.shell.foreground_group()
            if signal_group(group, signal.SIGINT):
                self.stopped.add(group)
                return

    async def escalate(self) -> bool:
        """The code went on (the interrupt came as a job ended): interrupt it again.

        A foreground job that ignores SIGINT gets SIGKILL; the shell itself does not.
        """
        group = self.shell.foreground_group()
        if group != self._last:
            await self.interrupt_code()
            return True
        if group == self.shell.pid:
            return False
        self.job_killed = signal_group(group, signal.SIGKILL)
        return self.job_killed

    def _leftovers(self) -> None:
        """The run is over: what is left of interrupted jobs goes; the FIFO closes."""
        for group in self.stopped - {self.shell.pid}:
            signal_group(group, signal.SIGKILL)  # children that ignored SIGINT
        self.stdin.close()

    # -- the end ------------------------------------------------------------------

    def finish(self, done: Finished) -> list[Message]:
        if self.job_killed:
            done = dataclasses.replace(done, note=_JOB_KILLED)
        return super().finish(done)

    async def gone(self, gone: Gone) -> list[Message]:
        messages = await super().gone(gone)
        final = messages[-1]
        final.extras = {**(final.extras or {}), "execution_count": self.route.key}
        return messages

    # -- stdin ------------------------------------------------------------------------

    async def background(self) -> None:
        """Feeds stdin from the input callback until the run is over, then cleans up."""
        try:
            if self.stdin.interactive:
                await self._feed()
            await anyio.sleep_forever()
        finally:
            self._leftovers()

    async def _feed(self) -> None:
        route, delay = self._route, _QUIET
        while True:
            route.activity = anyio.Event()
            with anyio.move_on_after(delay):
                await first_of(route.activity, route.finished)
            if route.finished.is_set():
                return
            if route.activity.is_set():
                delay = _QUIET
            elif not await anyio.to_thread.run_sync(self.stdin.reader_waiting, self.shell.pid):
                delay = min(delay * 2, _LONGEST)
            elif await self._answer():
                delay = _QUIET
            else:
                return

    async def _answer(self) -> bool:
        """Ask the callback for a line; False (and the run is stopped) if that failed."""
        route, callback = self._route, self.options.on_input
        assert callback is not None
        prompt = route.tail
        try:
            with anyio.fail_after(self.options.input_timeout):
                value = await call_input(callback, prompt)
            value.encode("utf-8")
        except Exception as exc:
            if not route.finished.is_set():
                failure = "no answer in time" if isinstance(exc, TimeoutError) else repr(exc)
                text = f"input({prompt!r}) could not be answered: {failure}"
                await route.put(replies.notice(text, "error", self.reply_to))
                await self.request_stop("input")
            return False
        if route.finished.is_set():
            return False
        self.stdin.answer(value)
        await route.put(Output(value + "\n"))
        return True
