"""jshell as an :class:`~..core.Interpreter`: a cell typed chunk by chunk on a PTY.

jshell runs with ``TERM=dumb`` (nothing echoed, no escapes) on a raw terminal,
whose bytes are parsed into :class:`~.stream.Event` items as they come. Each
prompt ends a chunk (see :mod:`.cells`); the run ends after the first chunk that
failed, or after its last. An interrupt is Ctrl-C, typed until the chunk stops
(one typed while jshell compiles is lost). After an interrupt, and after a run
with its own environment variables, one more line is typed: it restores them and
prints a numbered tag, and prompts before that tag are stale (a Ctrl-C that
reached an idle jshell prints one more).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ...errors import KernelStartError
from ...replies import Status
from ..base import ExecutionOptions
from ..core import Deliver, Finished, Gone, Line, Output, Route, StdinChannel
from ..core.procs import describe_exit, kill_session, read_available, signal_group, wait_for_exit
from ..core.pty import spawn_pty
from ..core.turns import first_of
from .cells import Chunk, plan_cell
from .report import Report, Snippets
from .stream import Event, TagParser, env_snippet, init_script, setup_snippet, sync_snippet

__all__ = ["JshellInterpreter"]

#: What jshell said before its first prompt, kept for a start failure's message.
_TAIL = 2000
#: Ctrl-C is typed again this often until the chunk stops, at most this many times.
_INTERRUPT_EVERY = 0.1
_INTERRUPTS = 50
#: After jshell ended, how long its terminal may stay open (a child of the code holds it).
_DRAIN_GRACE = 2.0


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


class JshellInterpreter:
    """One jshell; ``argv`` ends with the path of its load file, ``init``."""

    def __init__(
        self, argv: Sequence[str], *, init: Path, cwd: Path, env: Mapping[str, str], startup: float
    ) -> None:
        self._argv, self._init, self._cwd, self._env = list(argv), init, cwd, dict(env)
        self._startup = startup
        self._fifo = init.with_name("jshell-stdin")
        self.token = secrets.token_hex(8)
        self._parser = TagParser(self.token)
        self._stdin: StdinChannel | None = None
        self._child: Any = None
        self._fd = self.pid = -1
        self._gone: Gone | None = None
        self._ready, self._ended, self._closed = anyio.Event(), anyio.Event(), anyio.Event()
        self._scope = anyio.CancelScope()
        self._snippets = Snippets()
        self._deliver: Deliver | None = None
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
            await self._give(Output(f"Error at line {line}:\n{text}\n", "stderr"), route.key)
            await self._give(Finished(Status.ERROR), route.key)
        elif not plan.chunks:
            await self._give(Finished(Status.OK), route.key)
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

    async def wait(self) -> Gone:
        await self._ended.wait()
        assert self._gone is not None
        return self._gone

    async def kill(self) -> None:
        """End jshell and what it started; release the PTY and the FIFO; idempotent."""
        if self.pid > 0:
            kill_session(self.pid)
            signal_group(self.pid, signal.SIGKILL)
            with anyio.move_on_after(_DRAIN_GRACE + 3):
                await self._ended.wait()
        self._scope.cancel()
        if self._child is not None:
            anyio.notify_closing(self._fd)
            self._fd = -1  # its number may soon be another terminal's
            with contextlib.suppress(Exception):
                self._child.close(force=True)
            self._child = None
        if self._stdin is not None:
            self._stdin.close()

    def answer(self, key: object, line: str) -> None:
        """Give ``line`` to the code of run ``key`` if it waits; :class:`OSError` if it
        does not fit in the FIFO."""
        run = self._run
        if run is not None and run.key == key and run.waiting and self._stdin is not None:
            self._stdin.answer("=" + line)
            run.waiting = False

    # -- typing -------------------------------------------------------------------------

    async def _spawn(self) -> None:
        nothing = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)  # no descriptor to pass on
        try:
            self._stdin = StdinChannel.create(self._fifo)
            self._init.write_text(init_script(self.token), encoding="utf-8")
            args = (self._argv, self._cwd, self._env, nothing)
            self._child = await anyio.to_thread.run_sync(spawn_pty, *args)
        except Exception as exc:
            raise KernelStartError(f"jshell could not be started: {exc}") from exc
        finally:
            os.close(nothing)
        self._fd, self.pid = self._child.child_fd, self._child.pid
        attrs = termios.tcgetattr(self._fd)  # raw: Ctrl-C is a byte, no line length limit
        attrs[0] &= ~(termios.IXON | termios.ICRNL | termios.INLCR)
        attrs[3] &= ~(termios.ICANON | termios.ISIG | termios.IEXTEN | termios.ECHO)
        attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self._fd, termios.TCSANOW, attrs)
        os.set_blocking(self._fd, False)

    async def _write(self, text: str) -> None:
        """Type ``text`` into jshell's terminal (nothing, once it is gone)."""
        data = memoryview(text.encode("utf-8"))
        while data and self._fd >= 0:
            try:
                data = data[os.write(self._fd, data) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
            except (OSError, anyio.ClosedResourceError):
                return  # jshell is gone: the watcher says so

    def _say(self, word: str) -> bool:
        """End (``.``) or fail (``!``) the read that waits; False if the FIFO is full."""
        try:
            if self._stdin is not None:
                self._stdin.answer(word)
        except OSError:  # the code has yet to read what is there
            return False
        return True

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
            await self._give(Line(chunk.first), run.key)
        env = env_snippet(self.token, run.options.env) if run.options.env and not run.index else ""
        run.typing = True
        await self._write(env + chunk.text + "\n")
        run.typing = False

    async def _give(self, item: Any, key: object) -> None:
        assert self._deliver is not None
        await self._deliver(item, key)

    # -- what jshell says -------------------------------------------------------------

    async def _on(self, event: Event) -> None:
        run = self._run
        key = run.key if run is not None else self._last
        if event.kind in ("out", "err"):
            if not self._ready.is_set():
                self._said_at_start = (self._said_at_start + event.text)[-_TAIL:]
            await self._give(Output(event.text, "stdout" if event.kind == "out" else "stderr"), key)
        elif event.kind in ("error", "note"):
            if run is not None:
                run.failed |= event.kind == "error"
            report = run.report if run is not None else None
            for line in report.said(event.text) if report else [event.text]:
                await self._give(Output(line + "\n", "stderr"), key)
        elif event.kind == "input":
            if run is None or run.options.on_input is None or run.sync is not None:
                self._say(".")
            else:
                run.waiting = True
                await self._give(event, run.key)
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
            await self._give(Output(line + "\n", "stderr"), run.key)
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
        await self._give(Finished(Status.ERROR if run.failed else Status.OK), run.key)

    # -- the reader and the watcher ---------------------------------------------------

    async def _pump(self) -> None:
        with self._scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read)
                await self._watch()
                tg.cancel_scope.cancel()

    async def _read(self) -> None:
        try:
            while True:
                try:
                    await anyio.wait_readable(self._fd)
                except (OSError, anyio.ClosedResourceError):
                    break
                data = read_available(self._fd)
                if data is None:
                    break  # EIO: nobody holds the terminal any more
                for event in self._parser.feed(data):
                    await self._on(event)
            for event in self._parser.flush():
                await self._on(event)
        finally:
            self._closed.set()

    async def _watch(self) -> None:
        child = self._child
        await wait_for_exit(self.pid, lambda: child.wait())
        with contextlib.suppress(Exception):
            child.isalive()  # reaps it and records how it ended
        kill_session(self.pid)
        with anyio.move_on_after(_DRAIN_GRACE):
            await self._closed.wait()
        code = -child.signalstatus if child.signalstatus is not None else child.exitstatus
        if code is not None and code > 128:  # a launcher tells a signal as 128 + its number
            code = 128 - code
        if code is None or code < 0:
            self._gone = Gone(describe_exit(code, "jshell"), exit_code=code)
        else:
            self._gone = Gone.exited(f"called System.exit({code})", code)
        self._ended.set()
