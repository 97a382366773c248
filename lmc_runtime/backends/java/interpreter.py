"""jshell as an :class:`~..core.Interpreter`: a cell typed chunk by chunk on a raw PTY.

Each prompt ends a chunk (see :mod:`.cells`); the run ends after the first chunk
that failed, or after its last. An interrupt is Ctrl-C, typed until the chunk
stops. After an interrupt, or a run with its own environment, one more line
restores that environment and prints a numbered tag: prompts before that tag are
stale (a Ctrl-C that reached an idle jshell prints one more).
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ...errors import KernelStartError
from ...replies import Status
from ..base import ExecutionOptions
from ..core import Deliver, Finished, Line, Output, Route
from ..core.procs import signal_group
from ..core.turns import first_of
from .cells import Chunk, plan_cell
from .report import Report, Snippets
from .stream import Event, env_snippet, setup_snippet, sync_snippet
from .terminal import JshellTerminal

__all__ = ["JshellInterpreter"]

#: What jshell said before its first prompt, kept for a start failure's message.
_TAIL = 2000
#: Ctrl-C is typed again this often until the chunk stops, at most this many times.
_INTERRUPT_EVERY = 0.1
_INTERRUPTS = 50


@dataclass
class _Run:
    key: object
    chunks: tuple[Chunk, ...]
    options: ExecutionOptions
    first_id: int
    index: int = 0
    report: Report | None = None
    failed: bool = False
    interrupted: bool = False
    waiting: bool = False  # the code waits for a line of input
    typing: bool = False
    sync: int | None = None  # the number of the tag that ends the run
    synced: bool = False
    stopped: anyio.Event = field(default_factory=anyio.Event)


class JshellInterpreter(JshellTerminal):
    """Runs cells on a :class:`~.terminal.JshellTerminal`."""

    def __init__(
        self, argv: Sequence[str], *, init: Path, cwd: Path, env: Mapping[str, str], startup: float
    ) -> None:
        super().__init__(argv, init, cwd, env)
        self._startup = startup
        self._ready = anyio.Event()
        self._snippets = Snippets()
        self._deliver: Deliver = _nowhere
        self._tasks: TaskGroup | None = None
        self._run: _Run | None = None
        self._last: object = None  # the last run: what comes between runs is its late output
        self._next_id = 1
        self._syncs = 0
        self._said_at_start = ""
        self._prompts = 0  # before the first run: the load file ran, then the setup

    # -- the Interpreter protocol -------------------------------------------------

    async def launch(self, task_group: TaskGroup, deliver: Deliver) -> None:
        self._deliver, self._tasks = deliver, task_group
        await self._spawn()
        task_group.start_soon(self._pump)
        with anyio.move_on_after(self._startup):
            await first_of(self._ready, self._ended)
        if self._ready.is_set() and not self._ended.is_set():
            return
        why = self._gone.description if self._gone else "no prompt"
        await self.kill()
        said = self._said_at_start.strip()
        raise KernelStartError(f"jshell did not start: {why}" + (f":\n{said}" if said else ""))

    async def submit(self, code: str, options: ExecutionOptions, route: Route) -> None:
        plan = plan_cell(code)
        self._last = route.key
        if plan.problem is not None:
            line, text = plan.problem
            await self._deliver(Output(f"Error at line {line}:\n{text}\n", "stderr"), route.key)
            await self._deliver(Finished(Status.ERROR), route.key)
        elif not plan.chunks:
            await self._deliver(Finished(Status.OK), route.key)
        else:
            self._run = _Run(route.key, plan.chunks, options, self._next_id)
            await self._send_chunk(self._run)

    async def send_signal(self, signum: int) -> None:
        if signum != signal.SIGINT:
            signal_group(self.pid, signum)
            return
        run = self._run
        if run is not None and run.sync is None and not run.interrupted and self._tasks:
            run.interrupted = True
            self._tasks.start_soon(self._interrupt, run)

    def answer(self, key: object, line: str) -> None:
        """Give ``line`` to the code of run ``key`` if it waits (OSError: the FIFO is full)."""
        run = self._run
        if run is not None and run.key == key and run.waiting and self._stdin is not None:
            self._stdin.answer("=" + line)
            run.waiting = False

    # -- typing -------------------------------------------------------------------------

    async def _interrupt(self, run: _Run) -> None:
        """Type Ctrl-C until the chunk stops: jshell stops the snippet running then."""
        for _ in range(_INTERRUPTS):
            if run.sync is not None or self._run is not run:
                return
            if not run.typing:
                await self._write("\x03")
            if run.waiting:  # a read of the input FIFO sees the stop once it returns
                run.waiting = not self._say("!")
            with anyio.move_on_after(_INTERRUPT_EVERY):
                await run.stopped.wait()

    async def _send_chunk(self, run: _Run) -> None:
        chunk = run.chunks[run.index]
        run.report = Report(chunk, run.first_id, run.key, self._snippets)
        if run.options.track_lines:
            await self._deliver(Line(chunk.first), run.key)
        env = env_snippet(self.token, run.options.env) if run.options.env and not run.index else ""
        run.typing = True
        await self._write(env + chunk.text + "\n")
        run.typing = False

    # -- what jshell says -------------------------------------------------------------

    async def _on(self, event: Event) -> None:
        run = self._run
        key = run.key if run is not None else self._last
        if event.kind in ("out", "err"):
            if not self._ready.is_set():
                self._said_at_start = (self._said_at_start + event.text)[-_TAIL:]
            await self._deliver(
                Output(event.text, "stdout" if event.kind == "out" else "stderr"), key
            )
        elif event.kind in ("error", "note"):
            if run is not None:
                run.failed |= event.kind == "error"
            report = run.report if run is not None else None
            for line in report.said(event.text) if report else [event.text]:
                await self._deliver(Output(line + "\n", "stderr"), key)
        elif event.kind == "input":
            if run is None or run.options.on_input is None or run.sync is not None:
                self._say(".")
            else:
                run.waiting = True
                await self._deliver(event, run.key)
        elif event.kind == "sync":
            if run is not None and event.n == run.sync:
                run.synced = True
        elif run is None:  # a prompt
            self._next_id, self._prompts = event.n, self._prompts + 1
            if self._prompts == 1:
                await self._write(setup_snippet(self.token, str(self._fifo)) + "\n")
            else:
                self._ready.set()
        elif run.sync is None:
            await self._chunk_done(run, event.n)
        elif run.synced:
            self._next_id = event.n
            await self._finish(run)

    async def _chunk_done(self, run: _Run, snippet: int) -> None:
        chunk = run.chunks[run.index]
        for line in run.report.flush() if run.report else []:
            run.failed = True
            await self._deliver(Output(line + "\n", "stderr"), run.key)
        self._snippets.record(range(run.first_id, snippet), run.key, chunk.first)
        run.first_id = self._next_id = snippet
        run.waiting = False
        last = run.failed or run.index + 1 >= len(run.chunks)
        if run.interrupted or (last and run.options.env):
            run.stopped.set()
            self._syncs += 1
            run.sync = self._syncs
            restore = bool(run.options.env)
            await self._write(sync_snippet(self.token, run.sync, restore=restore) + "\n")
        elif last:
            await self._finish(run)
        else:
            run.index += 1
            await self._send_chunk(run)

    async def _finish(self, run: _Run) -> None:
        self._run, self._last = None, run.key
        run.stopped.set()
        await self._deliver(Finished(Status.ERROR if run.failed else Status.OK), run.key)


async def _nowhere(item: Any, key: object) -> None:
    """Where items go before the interpreter is launched."""
