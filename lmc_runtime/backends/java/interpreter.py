"""jshell as an :class:`~..core.Interpreter`: a cell typed chunk by chunk, read through its tags.

A cell is typed one chunk (see :mod:`.cells`) at a time; each prompt ends a
chunk, and the run ends after the first chunk that failed, after an interrupt,
or after its last. An interrupt is Ctrl-C, typed until the chunk stops (one
typed while jshell compiles is lost); then a line that prints a numbered tag
is typed, and prompts until that tag are stale: a Ctrl-C that reached an idle
jshell prints one more.
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
from ..core import Deliver, Finished, Gone, Line, Output, Route
from ..core.turns import first_of
from .cells import Chunk, plan_cell
from .process import JshellProcess
from .report import Report, Snippets
from .stream import (
    Err,
    Event,
    Prompt,
    Said,
    Synced,
    Wants,
    abort_word,
    eof_word,
    setup_snippet,
    sync_snippet,
)

__all__ = ["InputWanted", "JshellInterpreter"]

_TAIL = 2000
#: Ctrl-C is typed again this often until the chunk stops, at most this many times.
_INTERRUPT_EVERY = 0.1
_INTERRUPTS = 50


@dataclass(frozen=True)
class InputWanted:
    """The run's code waits for a line of input; ``prompt`` is what it printed last."""

    prompt: str


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
    waiting: bool = False
    typing: bool = False
    sync: int | None = None
    synced: bool = False
    tail: str = ""
    stopped: anyio.Event = field(default_factory=anyio.Event)


class JshellInterpreter:
    """Runs on a :class:`~.process.JshellProcess` (``argv`` ends with its load file, ``init``)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        init: Path,
        cwd: Path,
        env: Mapping[str, str],
        startup_timeout: float,
    ) -> None:
        self._process = JshellProcess(argv, init=init, cwd=cwd, env=env)
        self._startup_timeout = startup_timeout
        self._snippets = Snippets()
        self._deliver: Deliver | None = None
        self._tasks: TaskGroup | None = None
        self._started = False
        self._ready = anyio.Event()
        self._run: _Run | None = None
        #: The last run: what comes between runs is its late output.
        self._last: object = None
        self._next_id = 1
        self._syncs = 0
        self._said_at_start = ""

    @property
    def pid(self) -> int:
        return self._process.pid

    # -- the Interpreter protocol -------------------------------------------------

    async def launch(self, task_group: TaskGroup, deliver: Deliver) -> None:
        self._deliver, self._tasks = deliver, task_group
        process = self._process
        await process.start(task_group, self._on)
        with anyio.move_on_after(self._startup_timeout):
            await first_of(self._ready, process.ended)
        if self._ready.is_set() and not process.ended.is_set():
            return
        why = process.gone.description if process.gone else "no prompt"
        await self.kill()
        said = self._said_at_start.strip()
        raise KernelStartError(f"jshell did not start: {why}" + (f":\n{said}" if said else ""))

    async def submit(self, code: str, options: ExecutionOptions, route: Route) -> None:
        plan = plan_cell(code)
        self._last = route.key
        if plan.problem is not None:
            line, text = plan.problem
            await self._give(Output(f"Error at line {line}:\n{text}\n", "stderr"), route.key)
            await self._give(Finished(Status.ERROR), route.key)
        elif not plan.chunks:
            await self._give(Finished(Status.OK), route.key)
        else:
            self._run = _Run(route.key, plan.chunks, options, self._next_id)
            await self._send_chunk(self._run)

    async def send_signal(self, signum: int) -> None:
        if signum != signal.SIGINT:
            self._process.signal(signum)
            return
        run = self._run
        if run is not None and run.sync is None and not run.interrupted and self._tasks:
            run.interrupted = True
            self._tasks.start_soon(self._interrupt, run)

    async def wait(self) -> Gone:
        await self._process.ended.wait()
        assert self._process.gone is not None
        return self._process.gone

    async def kill(self) -> None:
        await self._process.kill()

    def answer(self, key: object, text: str) -> str:
        """Give the waiting code of run ``key`` the first line of ``text``; returns that line.

        Raises :class:`OSError` if it does not fit in the FIFO.
        """
        line = text.splitlines()[0] if text else ""
        run = self._run
        if run is not None and run.key == key and run.waiting:
            self._process.feed(line)
            run.waiting = False
        return line

    def _say(self, word: str) -> bool:
        """End or fail the read that waits, with one of the words the code's stdin knows."""
        try:
            self._process.feed(word)
        except OSError:  # the FIFO is full: the code has yet to read what is there
            return False
        return True

    # -- typing -------------------------------------------------------------------------

    async def _interrupt(self, run: _Run) -> None:
        """Type Ctrl-C until the chunk stops: jshell stops the snippet running then."""
        for _ in range(_INTERRUPTS):
            if run.sync is not None or self._run is not run:
                return
            if not run.typing:
                await self._process.write("\x03")
            if run.waiting:  # a read of the input FIFO sees the stop once it returns
                run.waiting = not self._say(abort_word(self._process.token))
            with anyio.move_on_after(_INTERRUPT_EVERY):
                await run.stopped.wait()

    async def _send_chunk(self, run: _Run) -> None:
        chunk = run.chunks[run.index]
        run.report = Report(chunk, run.first_id, run.key, self._snippets)
        if run.options.track_lines:
            await self._give(Line(chunk.first), run.key)
        run.typing = True
        await self._process.write(chunk.text + "\n")
        run.typing = False

    async def _give(self, item: Any, key: object) -> None:
        assert self._deliver is not None
        await self._deliver(item, key)

    # -- what jshell says -------------------------------------------------------------

    async def _on(self, event: Event) -> None:
        run = self._run
        key = run.key if run is not None else self._last
        if isinstance(event, str):
            if not self._ready.is_set():
                self._said_at_start = (self._said_at_start + event)[-_TAIL:]
            elif run is not None:
                run.tail = (run.tail + event).rsplit("\n", 1)[-1][-_TAIL:]
            await self._give(Output(event), key)
        elif isinstance(event, Err):
            await self._give(Output(event.text, "stderr"), key)
        elif isinstance(event, Said):
            report = run.report if run is not None else None
            if run is not None:
                run.failed |= event.error
            for line in report.said(event.text) if report else [event.text]:
                await self._give(Output(line + "\n", "stderr"), key)
        elif isinstance(event, Wants):
            await self._wanted(run)
        elif isinstance(event, Synced):
            if run is not None and event.n == run.sync:
                run.synced = True
        elif isinstance(event, Prompt):
            await self._prompt(run, event.snippet)

    async def _wanted(self, run: _Run | None) -> None:
        if run is None or run.options.on_input is None or run.sync is not None:
            self._say(eof_word(self._process.token))
            return
        run.waiting = True
        await self._give(InputWanted(run.tail), run.key)

    async def _prompt(self, run: _Run | None, snippet: int) -> None:
        if not self._started:  # the load file ran: set up the code's stdin
            self._started = True
            process = self._process
            await process.write(setup_snippet(process.token, str(process.fifo)) + "\n")
            return
        if not self._ready.is_set():
            self._next_id = snippet
            self._ready.set()
            return
        if run is None:
            self._next_id = snippet
            return
        if run.sync is not None:
            if run.synced:
                self._next_id = snippet
                await self._finish(run)
            return
        await self._chunk_done(run, snippet)

    async def _chunk_done(self, run: _Run, snippet: int) -> None:
        chunk = run.chunks[run.index]
        if run.report is not None:
            for line in run.report.flush():
                run.failed = True
                await self._give(Output(line + "\n", "stderr"), run.key)
        self._snippets.record(range(run.first_id, snippet), run.key, chunk.first)
        run.first_id = self._next_id = snippet
        run.waiting = False
        if run.interrupted:
            run.stopped.set()
            self._syncs += 1
            run.sync = self._syncs
            await self._process.write(sync_snippet(self._process.token, run.sync) + "\n")
        elif run.failed or run.index + 1 >= len(run.chunks):
            await self._finish(run)
        else:
            run.index += 1
            await self._send_chunk(run)

    async def _finish(self, run: _Run) -> None:
        self._run, self._last = None, run.key
        run.stopped.set()
        await self._give(Finished(Status.ERROR if run.failed else Status.OK), run.key)
