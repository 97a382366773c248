"""One shell on a PTY as an :class:`~..core.Interpreter`: its terminal, readers and exit.

The shell is a session leader on the PTY, echo off; the runtime reads the master
itself, so output streams as written and the done marker ends a run. Line records
come on a pipe; a pidfd says when the shell ends, ``EIO`` when its output is read.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shlex
import signal
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ... import replies
from ...errors import KernelStartError
from ...lifeline import await_exit
from ...procs import (
    close_watched,
    describe_exit,
    end_session,
    readable_now,
    signal_group,
)
from ...replies import Status
from ..base import ExecutionOptions, SessionSettings
from ..core import Deliver, Gone, Route, answers_fifo_reads
from ..core.pty import spawn_pty
from ..core.turns import first_of
from .dialect import Dialect, run_env
from .readers import ShellReaders

__all__ = ["ShellInterpreter"]

logger = logging.getLogger(__name__)

#: After the shell ended, how long its PTY may stay open (a detached descendant).
_DRAIN_GRACE = 2.0
#: How long a killed shell may take to end before its descriptors are closed anyway.
_KILL_WAIT = 5.0


class ShellInterpreter:
    """A shell (its :class:`~.dialect.Dialect`) on a PTY, run by the core's supervisor."""

    def __init__(
        self,
        dialect: Dialect,
        argv: Sequence[str],
        settings: SessionSettings,
        env: Mapping[str, str],
    ) -> None:
        self.dialect = dialect
        #: Each run's begun record says the shell took it (see :class:`~..core.Begun`).
        self.announces_begin = dialect.announces_begin
        self.work_dir = settings.work_dir
        #: How the shell sees a path of the host (in a sandbox, at its own place).
        self._inside = settings.inside
        self._argv, self._cwd, self._env = list(argv), settings.host_cwd, dict(env)
        self._startup_timeout = settings.timeouts.startup
        #: Holds the shell from its start until it is reaped.
        self._lifeline = settings.lifeline
        #: What wraps the shell's command line (a sandbox), if anything.
        self.launcher = settings.launcher
        self._token = secrets.token_hex(8)
        self._readers = ShellReaders(self._token)
        self._child: Any = None
        self.pid = self._fd = self._ctl = -1
        #: The shell's own process group (see :meth:`launch`); -1 until it is ready.
        self.group = -1
        self._deliver: Deliver | None = None
        self._scope = anyio.CancelScope()
        self._ended = anyio.Event()
        #: Popen-style: the exit status, or minus the signal; None while it runs.
        self._returncode: int | None = None
        self._reaped = False
        #: This run's cell (and variables) files, and what puts the variables back.
        self._files: list[Path] = []
        self._restore = ""
        #: The terminal's modes once the shell was ready; each typed line restores them.
        self._modes: list[Any] | None = None

    # -- the Interpreter protocol -------------------------------------------------

    async def launch(self, task_group: TaskGroup, deliver: Deliver) -> None:
        self._deliver = deliver
        init = self.work_dir / f"init.{self.dialect.program}"
        await self._spawn(init)
        task_group.start_soon(self._pump)
        await self._type(f". {shlex.quote(self._inside(init))}\n")
        with anyio.move_on_after(self._startup_timeout):
            await first_of(self._readers.ready, self._ended)
        if self._readers.ready.is_set() and not self._ended.is_set():
            with contextlib.suppress(termios.error, OSError):
                self._modes = termios.tcgetattr(self._fd)
            # At its prompt the shell owns the terminal. In a sandbox its group is not
            # ``pid``'s (the supervisor above bwrap): job control made one of its own.
            self.group = self.foreground_group()
            return
        why = f"no prompt within {self._startup_timeout:g} s"
        if self._ended.is_set():
            why = describe_exit(self._returncode, "the shell")
        early = self._readers.early()
        await self.kill()
        raise KernelStartError(
            f"the shell did not become ready: {why}" + (f"\n{early}" if early else "")
        )

    async def submit(self, code: str, options: ExecutionOptions, route: Route) -> None:
        """Write the code to a cell file and type the line that sources it, after what
        puts back the variables the last run set (see :func:`.dialect.run_env`)."""
        run = route.key
        assert isinstance(run, int)
        for path in self._files:
            path.unlink(missing_ok=True)
        cell = self.work_dir / f"cell-{run}.{self.dialect.program}"
        self._files, self._readers.run = [cell], run
        _write(cell, code if code.endswith("\n") or not code else code + "\n")
        prelude, self._restore = self._restore, ""
        if options.env:
            script, self._restore, invalid = run_env(options.env)
            if invalid:
                text = f"the shell cannot set {', '.join(map(repr, invalid))}: not shell names"
                await route.put(replies.notice(text, Status.ERROR, options.reply_to))
            env_file = self.work_dir / f"env-{run}.sh"
            _write(env_file, script)
            self._files.append(env_file)
            prelude += f". {shlex.quote(self._inside(env_file))}; "
        reads = answers_fifo_reads(options)
        stdin = self._inside(self.stdin_path(run)) if reads else os.devnull
        line = self.dialect.run_line(
            run, Path(self._inside(cell)), stdin, options.track_lines, prelude
        )
        await self._type(line)

    async def send_signal(self, signum: int) -> None:
        """SIGINT goes to the terminal's foreground group (the job, or the idle shell)."""
        signal_group(self.foreground_group() if signum == signal.SIGINT else self.pid, signum)

    async def wait(self) -> Gone:
        await self._ended.wait()
        code = self._returncode
        if code is None or code < 0:
            return Gone(describe_exit(code, "the shell"))
        return Gone.exited(f"exited the shell with status {code}", code)

    async def kill(self) -> None:
        """Kill every process of the shell's session, reap the shell, close the PTY."""
        self._scope.cancel()
        if self.pid > 0:
            await end_session(self.pid)
            if not self._reaped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                with anyio.move_on_after(_KILL_WAIT):
                    await await_exit(self.pid)
            self._release()
        self._close()

    def stdin_path(self, run: int) -> Path:
        """The FIFO a run with an input callback reads (its execution makes it)."""
        return self.work_dir / f"stdin-{run}"

    def foreground_group(self) -> int:
        """The process group that owns the terminal now (the shell's own when idle)."""
        try:
            return os.tcgetpgrp(self._fd)
        except OSError:
            return self.pid

    def output_pending(self) -> bool:
        """Whether the terminal holds output not read yet."""
        return readable_now(self._fd)

    # -- start and stop -------------------------------------------------------------

    async def _spawn(self, init: Path) -> None:
        """Write the init script and start the shell on a PTY, with the line-record pipe."""
        ctl_read, ctl_write = os.pipe()
        try:
            _write(init, self.dialect.init_script(self._token, ctl_write))
            self._child = await anyio.to_thread.run_sync(
                spawn_pty, self._argv, self._cwd, self._env, ctl_write
            )
        except Exception as exc:
            os.close(ctl_read)
            raise KernelStartError(f"the shell could not be started: {exc}") from exc
        finally:
            os.close(ctl_write)
        self._ctl = ctl_read
        # A descriptor of our own for the terminal: pexpect closes its own at once,
        # and this one is closed only once its reader has left its wait (close_watched).
        self._fd, self.pid = os.dup(self._child.child_fd), self._child.pid
        if self._lifeline is not None:
            self._lifeline.hold(self.pid)
        os.set_blocking(self._fd, False)
        os.set_blocking(ctl_read, False)

    async def _type(self, text: str) -> None:
        """Type ``text`` in the terminal modes the shell had when ready (not ``stty echo``'s)."""
        if self._modes is not None:
            with contextlib.suppress(termios.error, OSError):
                if termios.tcgetattr(self._fd) != self._modes:  # a set costs far more than a get
                    termios.tcsetattr(self._fd, termios.TCSANOW, self._modes)
        data = memoryview(text.encode("utf-8"))
        try:
            while data:
                try:
                    data = data[os.write(self._fd, data) :]
                except BlockingIOError:
                    await anyio.wait_writable(self._fd)
        except (OSError, anyio.ClosedResourceError):  # the exit watcher's news
            logger.info("the shell's terminal closed under a typed line", exc_info=True)

    def _release(self) -> None:
        """The shell has ended (or is killed): the lifeline lets it go before it is reaped."""
        if self._lifeline is not None:
            self._lifeline.release(self.pid)

    def _note_exit(self) -> None:
        """If the shell has ended, reap it (a non-blocking ``waitpid``) and keep how."""
        child = self._child
        try:
            if child is None or child.isalive():
                return
        except Exception:  # ptyprocess: someone else reaped it
            logger.debug("the shell was reaped elsewhere", exc_info=True)
        self._reaped = True
        signum = child.signalstatus
        self._returncode = -signum if signum is not None else child.exitstatus

    def _close(self) -> None:
        if self._child is not None:
            close_watched(self._fd)
            with contextlib.suppress(Exception):
                self._child.close(force=True)
            self._child, self._fd = None, -1
        if self._ctl >= 0:
            close_watched(self._ctl)
            self._ctl = -1
        for path in self._files:
            path.unlink(missing_ok=True)

    # -- the readers (see :mod:`.readers`) --------------------------------------------

    async def _pump(self) -> None:
        """Read until the shell has ended and its terminal is drained, then say so."""
        try:
            with self._scope:
                async with anyio.create_task_group() as tg:
                    assert self._deliver is not None
                    tg.start_soon(self._readers.read_pty, self._fd, self._deliver)
                    tg.start_soon(self._readers.read_lines, self._ctl, self._deliver)
                    await await_exit(self.pid)
                    self._release()
                    self._note_exit()
                    # The shell is gone; its jobs go too, and they release the terminal.
                    await end_session(self.pid)
                    with anyio.move_on_after(_DRAIN_GRACE):
                        await self._readers.pty_closed.wait()
                        await self._readers.records_closed.wait()  # every begun record is in
                    tg.cancel_scope.cancel()
        finally:
            self._ended.set()


def _write(path: Path, text: str) -> None:
    """``text`` as the whole of a new file at ``path`` (one write, no text layer)."""
    data = memoryview(text.encode("utf-8", "replace"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)
