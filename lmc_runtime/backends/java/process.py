"""The ``jshell`` process: its PTY, the FIFO its code's ``System.in`` reads, and its end.

jshell runs with ``TERM=dumb`` (its line reader then echoes nothing and draws
no escapes) on a terminal in raw mode: Ctrl-C reaches jshell as a byte, which
stops the running snippet, and no line length limit applies. The runtime reads
the PTY master itself and hands each :data:`~.stream.Event` on the moment it is
readable; a pidfd tells when jshell ends, the PTY's end of data when its last
output has been read.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import termios
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ...errors import KernelStartError
from ..core import Gone
from ..core.procs import describe_exit, kill_session, wait_for_exit
from ..core.pty import spawn_pty
from ..core.stdin import StdinChannel
from .stream import Event, TagParser, init_script

__all__ = ["JshellProcess"]

#: After jshell ended, how long its terminal may stay open (a child of the code holds it).
_DRAIN_GRACE = 2.0


class JshellProcess:
    """One ``jshell`` on a PTY; ``argv`` ends with the path of its load file, ``init``."""

    def __init__(
        self, argv: Sequence[str], *, init: Path, cwd: Path, env: Mapping[str, str]
    ) -> None:
        self._argv = list(argv)
        self._init, self._cwd, self._env = init, cwd, dict(env)
        self.token = secrets.token_hex(8)
        #: The FIFO that the code's ``System.in`` reads.
        self.fifo = init.with_name("jshell-stdin")
        self.pid = -1
        self.ended = anyio.Event()
        self.gone: Gone | None = None
        self._parser = TagParser(self.token)
        self._child: Any = None
        self._fd = -1
        self._stdin: StdinChannel | None = None
        self._scope = anyio.CancelScope()
        self._closed = anyio.Event()

    async def start(self, task_group: TaskGroup, on: Callable[[Event], Awaitable[None]]) -> None:
        """Spawn jshell; ``on`` gets what it says, in order, from a task of ``task_group``."""
        nothing = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)  # no descriptor to pass on
        try:
            self._stdin = StdinChannel.create(self.fifo)
            self._init.write_text(init_script(self.token), encoding="utf-8")
            self._child = await anyio.to_thread.run_sync(
                spawn_pty, self._argv, self._cwd, self._env, nothing
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
        task_group.start_soon(self._pump, on)

    async def write(self, text: str) -> None:
        """Type ``text`` into jshell's terminal (nothing, once it is gone)."""
        data = memoryview(text.encode("utf-8"))
        while data and self._fd >= 0:
            try:
                data = data[os.write(self._fd, data) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
            except (OSError, anyio.ClosedResourceError):
                return  # jshell is gone: the watcher says so

    def feed(self, line: str) -> None:
        """One line for the code's ``System.in``; :class:`OSError` if it does not fit."""
        if self._stdin is not None:
            self._stdin.answer(line)

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    async def kill(self) -> None:
        """End jshell and what it started; release the PTY and the FIFO; idempotent."""
        if self.pid > 0:
            kill_session(self.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with anyio.move_on_after(_DRAIN_GRACE + 3):
                await self.ended.wait()
        self._scope.cancel()
        if self._child is not None:
            anyio.notify_closing(self._fd)
            self._fd = -1  # its number may soon be another terminal's
            with contextlib.suppress(Exception):
                self._child.close(force=True)
            self._child = None
        if self._stdin is not None:
            self._stdin.close()

    # -- the reader and the watcher ---------------------------------------------------

    async def _read(self, on: Callable[[Event], Awaitable[None]]) -> None:
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
                    await on(event)
            for event in self._parser.flush():
                await on(event)
        finally:
            self._closed.set()

    async def _pump(self, on: Callable[[Event], Awaitable[None]]) -> None:
        with self._scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read, on)
                await self._watch()
                tg.cancel_scope.cancel()

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
            self.gone = Gone(describe_exit(code, "jshell"), exit_code=code)
        else:
            self.gone = Gone.exited(f"called System.exit({code})", code)
        self.ended.set()
