"""jshell's terminal: a raw PTY, the FIFO its code's ``System.in`` reads, and its end.

jshell runs with ``TERM=dumb`` (its line reader then echoes nothing and draws no
escapes) on a terminal in raw mode: Ctrl-C reaches jshell as a byte, which stops
the running snippet, and no line length limit applies. Its bytes are parsed into
:class:`~.stream.Event` items the moment they are readable; a pidfd tells when
jshell ends, the PTY's end of data when its last output has been read.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from ...errors import KernelStartError
from ..core import Gone, StdinChannel
from ..core.procs import describe_exit, end_session, read_available, signal_group, wait_for_exit
from ..core.pty import spawn_pty
from .stream import Event, TagParser, init_script

__all__ = ["JshellTerminal"]

#: After jshell ended, how long its terminal may stay open (a child of the code holds it).
_DRAIN_GRACE = 2.0


class JshellTerminal:
    """One jshell on a PTY; ``argv`` ends with the path of its load file, ``init``."""

    def __init__(self, argv: Sequence[str], init: Path, cwd: Path, env: Mapping[str, str]) -> None:
        self._argv, self._init, self._cwd, self._env = list(argv), init, cwd, dict(env)
        self._fifo = init.with_name("jshell-stdin")
        self.token = secrets.token_hex(8)
        self._parser = TagParser(self.token)
        self._stdin: StdinChannel | None = None
        self._child: Any = None
        self._fd = self.pid = -1
        self._gone: Gone | None = None
        self._ended, self._closed = anyio.Event(), anyio.Event()
        self._scope = anyio.CancelScope()

    async def _on(self, event: Event) -> None:
        """What jshell said, in order."""
        raise NotImplementedError

    async def wait(self) -> Gone:
        await self._ended.wait()
        assert self._gone is not None
        return self._gone

    async def kill(self) -> None:
        if self.pid > 0:
            await end_session(self.pid)
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
        await end_session(self.pid)
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
