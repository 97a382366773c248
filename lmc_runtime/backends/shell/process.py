"""One shell process on a PTY: spawned by pexpect, read by an event-driven loop.

pexpect (ptyprocess) starts the shell as a session leader with the PTY as its
controlling terminal, echo off. From then on the runtime reads the PTY master
itself: ``anyio.wait_readable`` then ``os.read``, so output streams the moment
it is written, ``\\r`` and prompts without a newline included. The DEBUG
trap's line records come on a pipe of their own. A pidfd says when the shell
ends; the PTY's end of data (``EIO`` once no process holds the terminal) says
when its last output has been read.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import termios
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup

from ...errors import KernelStartError
from ..turns import first_of
from .dialect import Dialect
from .lines import LineRecord, parse_records
from .marker import Done, MarkerParser
from .procs import describe_exit, kill_session, wait_for_exit
from ..core.pty import spawn_pty

__all__ = ["ExitInfo", "ShellProcess", "Sink"]

logger = logging.getLogger(__name__)

_READ_SIZE = 65536
#: Output printed while no execution runs (background jobs), kept for the next run.
_LATE_LIMIT = 64 * 1024
#: After the shell ended, how long its PTY may stay open (a detached descendant).
_DRAIN_GRACE = 2.0


@dataclass(frozen=True)
class ExitInfo:
    """How a shell ended; ``intentional`` when the runtime ended it (with ``status``)."""

    description: str
    exit_code: int | None = None
    signal: int | None = None
    intentional: bool = False
    status: str = "kernel_died"


class Sink(Protocol):
    """Where a running execution receives what its shell produces."""

    async def output(self, data: bytes) -> None: ...

    async def done(self, marker: Done) -> None: ...

    def line(self, record: LineRecord) -> None: ...

    async def gone(self, info: ExitInfo) -> None: ...


class ShellProcess:
    """A running shell, its PTY reader, its line-record reader and its exit watcher."""

    def __init__(
        self,
        dialect: Dialect,
        *,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        work_dir: Path,
        on_exit: Callable[[ShellProcess, ExitInfo, bool], None],
    ) -> None:
        self.dialect = dialect
        self.token = secrets.token_hex(8)
        self._argv = list(argv)
        self._cwd = cwd
        self._env = dict(env)
        self._work_dir = work_dir
        self._on_exit = on_exit
        self._parser = MarkerParser(self.token)
        self._child: Any = None
        self.fd = -1
        self.pid = -1
        self._ctl_read = -1
        self._scope = anyio.CancelScope()
        self.sink: Sink | None = None
        self.ready = anyio.Event()
        self.ended = anyio.Event()
        self.info: ExitInfo | None = None
        self._ending: ExitInfo | None = None
        self._pty_closed = anyio.Event()
        self._late: list[bytes] = []
        self._late_size = 0
        self._late_dropped = 0
        #: The terminal's modes once the shell was ready; each command line restores them.
        self._modes: list[Any] | None = None

    # -- start -------------------------------------------------------------

    async def start(self, task_group: TaskGroup, timeout: float) -> None:
        """Spawn the shell, start reading, run the init script, wait for the first prompt."""
        init = self._work_dir / f"init.{self.dialect.program}"
        ctl_read, ctl_write = os.pipe()
        try:
            init.write_text(self.dialect.init_script(self.token, ctl_write), encoding="utf-8")
            self._child = await anyio.to_thread.run_sync(
                spawn_pty, self._argv, self._cwd, self._env, ctl_write
            )
        except Exception as exc:
            os.close(ctl_read)
            raise KernelStartError(f"the shell could not be started: {exc}") from exc
        finally:
            os.close(ctl_write)
        self._ctl_read = ctl_read
        self.fd, self.pid = self._child.child_fd, self._child.pid
        os.set_blocking(self.fd, False)
        os.set_blocking(ctl_read, False)
        task_group.start_soon(self._run)
        self.send(f". '{init}'\n")
        with anyio.move_on_after(timeout):
            await first_of(self.ready, self.ended)
        if not self.ready.is_set():
            why = self.info.description if self.info else f"no prompt within {timeout:g} s"
            await self.kill("the shell did not start")
            raise KernelStartError(f"the shell did not become ready: {why}")
        with contextlib.suppress(termios.error, OSError):
            self._modes = termios.tcgetattr(self.fd)

    # -- talking to the shell ----------------------------------------------

    def send(self, text: str) -> None:
        """Type ``text`` into the shell (a whole command line, short).

        The terminal's modes are restored first: code that ran ``stty echo``
        (or ``stty raw``) would otherwise see the runtime's line echoed back.
        """
        if self._modes is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSANOW, self._modes)
        data = text.encode("utf-8")
        while data:
            try:
                written = os.write(self.fd, data)
            except BlockingIOError:
                raise KernelStartError("the shell's terminal does not accept input") from None
            data = data[written:]

    def foreground_group(self) -> int:
        """The process group that owns the terminal now (the shell's own when idle)."""
        try:
            return os.tcgetpgrp(self.fd)
        except OSError:
            return self.pid

    def signal_foreground(self, sig: int) -> int:
        """Send ``sig`` to the terminal's foreground process group; returns that group."""
        group = self.foreground_group()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, sig)
        return group

    def take_late(self) -> tuple[bytes, int]:
        """Output printed between executions, and how many bytes were dropped."""
        data, dropped = b"".join(self._late), self._late_dropped
        self._late, self._late_size, self._late_dropped = [], 0, 0
        return data, dropped

    async def kill(self, reason: str, status: str = "restarted") -> None:
        """End the shell and its jobs on purpose; wait until its watcher has seen it."""
        if self._ending is None and self.info is None:
            self._ending = ExitInfo(reason, intentional=True, status=status)
        if self.pid > 0:
            kill_session(self.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with anyio.move_on_after(_DRAIN_GRACE + 3):
                await self.ended.wait()
        self.close()

    def close(self) -> None:
        """Stop the readers and release the PTY and pipe descriptors."""
        self._scope.cancel()
        if self._child is not None:
            anyio.notify_closing(self.fd)
            with contextlib.suppress(Exception):
                self._child.close(force=True)
            self._child = None
        if self._ctl_read >= 0:
            anyio.notify_closing(self._ctl_read)
            os.close(self._ctl_read)
            self._ctl_read = -1

    # -- background tasks --------------------------------------------------

    async def _run(self) -> None:
        with self._scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read_pty)
                tg.start_soon(self._read_lines)
                tg.start_soon(self._watch)

    async def _read_pty(self) -> None:
        try:
            while True:
                try:
                    await anyio.wait_readable(self.fd)
                    data = os.read(self.fd, _READ_SIZE)
                except BlockingIOError:
                    continue
                except (OSError, anyio.ClosedResourceError):
                    break  # EIO: no process holds the terminal any more
                if not data:
                    break
                for item in self._parser.feed(data):
                    await self._deliver(item)
            rest = self._parser.flush()
            if rest:
                await self._deliver(rest)
        finally:
            self._pty_closed.set()

    async def _deliver(self, item: bytes | Done) -> None:
        sink = self.sink
        if isinstance(item, Done):
            if not self.ready.is_set():
                self.ready.set()
            elif sink is not None:
                self.sink = None  # from here on, output belongs to no execution
                await sink.done(item)
        elif sink is not None:
            await sink.output(item)
        elif self.ready.is_set():
            if self._late_size + len(item) > _LATE_LIMIT:
                self._late_dropped += len(item)
            else:
                self._late.append(item)
                self._late_size += len(item)

    async def _read_lines(self) -> None:
        buffer = b""
        while True:
            try:
                await anyio.wait_readable(self._ctl_read)
                data = os.read(self._ctl_read, _READ_SIZE)
            except BlockingIOError:
                continue
            except (OSError, anyio.ClosedResourceError):
                return
            if not data:
                return
            records, buffer = parse_records(buffer + data)
            sink = self.sink
            if sink is not None:
                for record in records:
                    sink.line(record)

    async def _watch(self) -> None:
        await wait_for_exit(self.pid, self._reap)
        with contextlib.suppress(Exception):
            self._child.isalive()  # reaps it and records how it ended
        # The shell is gone; its jobs go too, and they release the terminal.
        kill_session(self.pid)
        with anyio.move_on_after(_DRAIN_GRACE):
            await self._pty_closed.wait()
        info = self._ending or ExitInfo(
            describe_exit(self._child.exitstatus, self._child.signalstatus),
            exit_code=self._child.exitstatus,
            signal=self._child.signalstatus,
            status="restarted" if self._child.signalstatus is None else "kernel_died",
        )
        # No await from here to the restart being scheduled: a cell started
        # meanwhile either sees ``ended`` or gets ``gone``.
        self.info = info
        sink, self.sink = self.sink, None
        self.ended.set()
        self._on_exit(self, info, sink is not None)
        if sink is not None:
            await sink.gone(info)
        self._scope.cancel()

    def _reap(self) -> None:
        with contextlib.suppress(Exception):
            self._child.wait()
