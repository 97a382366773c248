"""One ``jshell`` on a PTY: typed into chunk by chunk, read through its tags.

jshell runs with ``TERM=dumb`` (its line reader echoes nothing and draws no
escapes) on a terminal in raw mode: Ctrl-C reaches jshell as a byte, which
stops the running snippet, and no line length limit applies. The code's
``System.in`` reads a FIFO (see :func:`.stream.setup_snippet`). A cell is
typed one chunk (see :mod:`.cells`) at a time; each prompt ends a
chunk, and the run ends at the first chunk that failed, after an interrupt,
or after its last. After an interrupt a line that prints a numbered tag is
typed, and prompts until that tag are stale: a Ctrl-C that reached an idle
jshell prints one more. A pidfd tells when jshell ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import termios
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ...errors import KernelStartError
from ...replies import Status
from ..base import ExecutionOptions
from ..core import Deliver, Finished, Gone, Line, Output, Route
from ..core.procs import describe_exit, kill_session, wait_for_exit
from ..core.pty import spawn_pty
from ..turns import first_of
from .cells import Chunk, plan_cell
from .report import Report, Snippets
from .stream import (
    Err,
    Prompt,
    Said,
    Synced,
    TagParser,
    Wants,
    abort_word,
    eof_word,
    init_script,
    setup_snippet,
    sync_snippet,
)

__all__ = ["InputWanted", "JshellInterpreter"]

logger = logging.getLogger(__name__)

#: After jshell ended, how long its terminal may stay open (a child of the code holds it).
_DRAIN_GRACE = 2.0
_TAIL = 2000
#: Ctrl-C is typed again this often until the chunk stops (one typed while jshell
#: compiles is lost), at most this many times.
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
    sync: int | None = None
    synced: bool = False
    typing: bool = False
    tail: str = ""
    stopped: anyio.Event = field(default_factory=anyio.Event)


class JshellInterpreter:
    """``jshell`` on a PTY as an :class:`~..core.Interpreter`."""

    def __init__(
        self,
        command: Callable[[Sequence[str]], list[str]],
        jshell: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        work_dir: Path,
        startup_timeout: float,
    ) -> None:
        self._command = command
        self._jshell = list(jshell)
        self._cwd, self._env, self._work_dir = cwd, dict(env), work_dir
        self._startup_timeout = startup_timeout
        self.token = secrets.token_hex(8)
        self._parser = TagParser(self.token)
        self._snippets = Snippets()
        self._deliver: Deliver | None = None
        self._tasks: TaskGroup | None = None
        self._child: Any = None
        self.pid = -1
        self._fd = self._stdin = -1
        self._scope = anyio.CancelScope()
        self._started = False
        self._ready, self._ended, self._pty_closed = anyio.Event(), anyio.Event(), anyio.Event()
        self._gone: Gone | None = None
        self._run: _Run | None = None
        self._next_id = 1
        self._syncs = 0
        self._said_at_start = ""
        self._fifo = Path()

    # -- the Interpreter protocol -------------------------------------------------

    async def launch(self, task_group: TaskGroup, deliver: Deliver) -> None:
        self._deliver, self._tasks = deliver, task_group
        await self._spawn()
        task_group.start_soon(self._pump)
        with anyio.move_on_after(self._startup_timeout):
            await first_of(self._ready, self._ended)
        if self._ready.is_set() and not self._ended.is_set():
            return
        why = self._gone.description if self._gone else f"no prompt in {self._startup_timeout:g} s"
        await self.kill()
        said = self._said_at_start.strip()[-_TAIL:]
        raise KernelStartError(f"jshell did not start: {why}" + (f":\n{said}" if said else ""))

    async def submit(self, code: str, options: ExecutionOptions, route: Route) -> None:
        plan = plan_cell(code)
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
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)
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
        if self.pid > 0:
            kill_session(self.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with anyio.move_on_after(_DRAIN_GRACE + 3):
                await self._ended.wait()
        self._scope.cancel()
        if self._child is not None:
            anyio.notify_closing(self._fd)
            self._fd = -1  # its number may soon be another terminal's
            with contextlib.suppress(Exception):
                self._child.close(force=True)
            self._child = None
        if self._stdin >= 0:
            os.close(self._stdin)
            self._stdin = -1

    def answer(self, key: object, line: str | None) -> None:
        """Give the waiting code of run ``key`` a line, or (None) a failed read."""
        run = self._run
        if run is not None and run.key == key and run.waiting:
            run.waiting = False
            self._feed(abort_word(self.token) if line is None else line)

    async def _interrupt(self, run: _Run) -> None:
        """Type Ctrl-C until the chunk stops: jshell stops the snippet running then."""
        for _ in range(_INTERRUPTS):
            if run.sync is not None or self._run is not run:
                return
            if run.waiting:  # a read of the input FIFO does not see a stop
                self._feed(abort_word(self.token))
            if not run.typing:
                await self._write("\x03")
            with anyio.move_on_after(_INTERRUPT_EVERY):
                await run.stopped.wait()

    def _feed(self, line: str) -> None:
        """One line for the code's standard input (only its first line, if it has more)."""
        first = line.splitlines()[0] if line else ""
        with contextlib.suppress(OSError):
            os.write(self._stdin, (first + "\n").encode("utf-8", "replace"))

    # -- start ------------------------------------------------------------------------

    def _make_stdin(self) -> Path:
        """The FIFO the code's standard input reads, held open here read-write."""
        fifo = self._work_dir / "jshell-stdin"
        with contextlib.suppress(FileNotFoundError):
            fifo.unlink()
        os.mkfifo(fifo, 0o600)
        # jshell may run as another user (the sandbox's); the folder, which only
        # the host writes and that user's group may enter, guards it.
        os.chmod(fifo, 0o666)
        self._stdin = os.open(fifo, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        return fifo

    async def _spawn(self) -> None:
        init = self._work_dir / "jshell-init.jsh"
        argv = self._command([*self._jshell, str(init)])
        nothing = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)  # no descriptor to pass on
        try:
            self._fifo = self._make_stdin()
            init.write_text(init_script(self.token), encoding="utf-8")
            self._child = await anyio.to_thread.run_sync(
                spawn_pty, argv, self._cwd, self._env, nothing
            )
        except Exception as exc:
            raise KernelStartError(f"jshell could not be started: {exc}") from exc
        finally:
            os.close(nothing)
        self._fd, self.pid = self._child.child_fd, self._child.pid
        attrs = termios.tcgetattr(self._fd)
        attrs[0] &= ~(termios.IXON | termios.ICRNL | termios.INLCR)
        attrs[3] &= ~(termios.ICANON | termios.ISIG | termios.IEXTEN | termios.ECHO)
        attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self._fd, termios.TCSANOW, attrs)
        os.set_blocking(self._fd, False)

    # -- typing -------------------------------------------------------------------------

    async def _write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data and self._fd >= 0:
            try:
                data = data[os.write(self._fd, data) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
            except (OSError, anyio.ClosedResourceError):
                return  # jshell is gone: its watcher says so

    async def _send_chunk(self, run: _Run) -> None:
        chunk = run.chunks[run.index]
        run.report = Report(chunk, run.first_id, run.key, self._snippets)
        if run.options.track_lines:
            await self._give(Line(chunk.first), run.key)
        run.typing = True
        await self._write(chunk.text + "\n")
        run.typing = False

    async def _give(self, item: Any, key: object) -> None:
        assert self._deliver is not None
        await self._deliver(item, key)

    # -- what jshell says -------------------------------------------------------------

    async def _on(self, event: object) -> None:
        run = self._run
        key = run.key if run is not None else None
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
            self._feed(eof_word(self.token))
            return
        run.waiting = True
        await self._give(InputWanted(run.tail), run.key)

    async def _prompt(self, run: _Run | None, snippet: int) -> None:
        if not self._started:  # the load file ran: set up the code's stdin
            self._started = True
            await self._write(setup_snippet(self.token, str(self._fifo)) + "\n")
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
            await self._write(sync_snippet(self.token, run.sync) + "\n")
        elif run.failed or run.index + 1 >= len(run.chunks):
            await self._finish(run)
        else:
            run.index += 1
            await self._send_chunk(run)

    async def _finish(self, run: _Run) -> None:
        self._run = None
        run.stopped.set()
        await self._give(Finished(Status.ERROR if run.failed else Status.OK), run.key)

    # -- readers and the watcher ----------------------------------------------------------

    async def _read_pty(self) -> None:
        try:
            while True:
                try:
                    await anyio.wait_readable(self._fd)
                    data = os.read(self._fd, 65536)
                except BlockingIOError:
                    continue
                except (OSError, anyio.ClosedResourceError):
                    break  # EIO: nobody holds the terminal any more
                if not data:
                    break
                for event in self._parser.feed(data):
                    await self._on(event)
            for event in self._parser.flush():
                await self._on(event)
        finally:
            self._pty_closed.set()

    async def _pump(self) -> None:
        with self._scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read_pty)
                await self._watch()
                tg.cancel_scope.cancel()

    async def _watch(self) -> None:
        child = self._child
        await wait_for_exit(self.pid, lambda: child.wait())
        with contextlib.suppress(Exception):
            child.isalive()  # reaps it and records how it ended
        kill_session(self.pid)
        with anyio.move_on_after(_DRAIN_GRACE):
            await self._pty_closed.wait()
        if child.signalstatus is not None:
            code = -child.signalstatus
            self._gone = Gone(describe_exit(code, "jshell"), exit_code=code)
        else:
            status = child.exitstatus
            self._gone = Gone.exited(f"called System.exit({status})", status)
        self._ended.set()
