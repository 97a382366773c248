"""One run in a shell: the shell's own rungs of the stop ladder, and its stdin.

The core runs the deadline, the ladder, line pacing and the final message.
What is the shell's: an interrupt goes to the terminal's foreground process
group (the job running, or the shell itself); a job that ignores it is killed
while the shell keeps its state; once the run is over, what is left of the
interrupted job goes too.

A program reading stdin announces nothing. So, with an input callback, the
feeder waits for the output to go quiet (any output restarts the wait), then
asks ``/proc`` once whether a process of the shell's session is blocked
reading the run's stdin FIFO; if not, it waits again, twice as long each
time, up to a second. When one is, the callback gets the last unfinished
output line as the prompt, and its answer is written to the FIFO and echoed.
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
        #: The process group the interrupt went to.
        self.stopped_group: int | None = None
        self.job_killed = False

    # -- the ladder ---------------------------------------------------------------

    async def interrupt_code(self) -> None:
        self.stopped_group = self.shell.foreground_group()
        signal_group(self.stopped_group, signal.SIGINT)

    async def escalate(self) -> bool:
        """A foreground job that ignores SIGINT gets SIGKILL; the shell itself does not."""
        group = self.shell.foreground_group()
        if group == self.shell.pid:
            return False
        self.job_killed = signal_group(group, signal.SIGKILL)
        return self.job_killed

    def _leftovers(self) -> None:
        """The run is over: what is left of the interrupted job goes; the FIFO closes."""
        group = self.stopped_group
        if group is not None and group != self.shell.pid:
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
        route = self._route
        delay = _QUIET
        while not route.finished.is_set():
            route.activity = anyio.Event()
            with anyio.move_on_after(delay):
                await first_of(route.activity, route.finished)
            if route.finished.is_set():
                return
            if route.activity.is_set():
                delay = _QUIET
                continue
            waiting = await anyio.to_thread.run_sync(self.stdin.reader_waiting, self.shell.pid)
            if not waiting:
                delay = min(delay * 2, _LONGEST)
                continue
            if not await self._answer():
                return
            delay = _QUIET

    async def _answer(self) -> bool:
        """Ask the callback for a line; False (and the run is stopped) if that failed."""
        route = self._route
        prompt = route.tail
        callback = self.options.on_input
        assert callback is not None
        failure: str | None = None
        value = ""
        try:
            with anyio.fail_after(self.options.input_timeout):
                value = await call_input(callback, prompt)
            value.encode("utf-8")
        except TimeoutError:
            failure = "no answer in time"
        except Exception as exc:
            failure = repr(exc)
        if route.finished.is_set():
            return False
        if failure is not None:
            text = f"input({prompt!r}) could not be answered: {failure}"
            await route.put(replies.notice(text, "error", self.reply_to))
            await self.request_stop("input")
            return False
        self.stdin.answer(value)
        await route.put(Output(value + "\n"))
        return True
