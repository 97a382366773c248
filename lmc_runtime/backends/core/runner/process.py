"""A runner: one process that speaks :mod:`.wire` (node's ``runner.js``, the JVM's
``LmcJava``), with its FIFOs, its readers and its exit.

The runtime holds the events and control FIFOs read-write (no false end of
file); the runner opens them by path, so no child of the code inherits them.
The code's stdin is a third FIFO whose read end the runner holds: with no writer,
a read gets end-of-input at once (a run with an input callback opens the write end).
In a sandbox the launcher's wrapper opens it, inside, and the FIFOs' paths are
given as the runner sees them (see :class:`~...base.ViewingLauncher`).
Everything else (turns, deadlines, the stop ladder, restarts) is the core's.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

import anyio
from anyio.abc import TaskGroup
from anyio.lowlevel import checkpoint

from ....errors import KernelStartError
from ....lifeline import Lifeline, await_exit
from ....procs import close_watched, describe_exit, read_available, signal_group
from ...base import ExecutionOptions, SessionSettings
from ..interpreter import Deliver
from ..items import Finished, Gone, Output
from ..native import NativeOutput
from ..route import Route
from ..stdin import make_fifo
from ..turns import first_of
from .wire import (
    Decoder,
    Event,
    Exiting,
    Keyed,
    Ready,
    encode_request,
    encode_stop,
)

__all__ = ["RunnerInterpreter"]

#: How many of its last lines a runner that failed to start is quoted by.
_TAIL_LINES = 20


class RunnerInterpreter:
    """``ARGV EVENTS CONTROL``, started as ``settings`` say (its launcher, folders,
    timeouts, lifeline), as an :class:`~.Interpreter`; ``who`` names it in messages."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        settings: SessionSettings,
        env: Mapping[str, str],
        who: str,
    ) -> None:
        self.who = who
        self._settings = settings
        #: Holds the runner from its start until it is reaped.
        self._lifeline: Lifeline | None = settings.lifeline
        self._argv = list(argv)
        self._cwd = settings.host_cwd
        self._env = dict(env)
        self._fifo_dir = settings.work_dir
        #: The code's stdin; the runner holds its read end.
        self.stdin_path = self._fifo_dir / "stdin"
        self._startup_timeout = settings.timeouts.startup
        self._popen: subprocess.Popen[bytes] | None = None
        self._fds: dict[str, int] = {}
        #: The runner's own stdout and stderr (child processes, its warnings).
        self._native: NativeOutput | None = None
        self._deliver: Deliver | None = None
        self._scope = anyio.CancelScope()
        #: The events reader's wait, which the exit watcher cancels to drain.
        self._waiting = anyio.CancelScope()
        self._ready = anyio.Event()
        self._ended = anyio.Event()
        self._gone: Gone | None = None
        self._announced: int | None = None

    # -- the Interpreter protocol -------------------------------------------------

    async def launch(self, task_group: TaskGroup, deliver: Deliver) -> None:
        self._deliver = deliver
        self._spawn()
        task_group.start_soon(self._pump)
        with anyio.move_on_after(self._startup_timeout) as scope:
            await first_of(self._ready, self._ended)
        if self._ready.is_set() and not self._ended.is_set():
            return
        await self.kill()
        if scope.cancelled_caught:
            raise KernelStartError(
                f"{self.who} did not become ready within {self._startup_timeout:g} s"
            )
        tail = self._native.tail(_TAIL_LINES) if self._native is not None else ""
        gone = self._gone.description if self._gone else f"{self.who} ended"
        raise KernelStartError(f"{gone} while starting" + (f":\n{tail}" if tail else ""))

    async def submit(self, code: str, options: ExecutionOptions, route: Route) -> None:
        assert isinstance(route.key, int)
        await self._send(
            encode_request(route.key, code, lines=options.track_lines, env=options.env)
        )

    async def stop(self, route: Route) -> None:
        """Ask the runner to stop run ``route`` if it still runs (never a later one)."""
        assert isinstance(route.key, int)
        await self._send(encode_stop(route.key))

    async def _send(self, request: bytes) -> None:
        data = memoryview(request)
        fd = self._fds.get("control", -1)
        if fd < 0:
            return
        while data:
            try:
                data = data[os.write(fd, data) :]
            except BlockingIOError:
                await anyio.wait_writable(fd)

    @property
    def pid(self) -> int:
        """The runner's pid, which is also its session's id (-1 before it started)."""
        return self._popen.pid if self._popen is not None else -1

    async def send_signal(self, signum: int) -> None:
        if self._popen is not None:
            signal_group(self._popen.pid, signum)

    async def wait(self) -> Gone:
        await self._ended.wait()
        assert self._gone is not None
        return self._gone

    async def kill(self) -> None:
        self._scope.cancel()
        if self._popen is not None:
            signal_group(self._popen.pid, signal.SIGKILL)
            with anyio.move_on_after(5):
                await await_exit(self._popen.pid)
            self._poll(self._popen)
        for fd in self._fds.values():
            close_watched(fd)
        self._fds = {}
        if self._native is not None:
            self._native.close()

    # -- start --------------------------------------------------------------------

    def _spawn(self) -> None:
        """Make the FIFOs and start the runner (its command ends with the paths of two)."""
        paths = {name: self._fifo_dir / name for name in ("events", "control")}
        self._fifo_dir.mkdir(parents=True, exist_ok=True)
        stdin = -1
        try:
            for name, path in paths.items():
                make_fifo(path)
                self._fds[name] = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            make_fifo(self.stdin_path)
            argv = [*self._argv, str(paths["events"]), str(paths["control"])]
            command = self._settings.reading(argv, self.stdin_path)
            if command is None:
                # Opened without blocking (there is no writer), then handed over blocking.
                command = self._settings.command(argv)
                stdin = os.open(self.stdin_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                os.set_blocking(stdin, True)
            self._native = native = NativeOutput(self._forward)
            try:
                self._popen = subprocess.Popen(
                    command,
                    cwd=self._cwd,
                    env=self._env,
                    stdin=stdin if stdin >= 0 else subprocess.DEVNULL,
                    stdout=native.launch_args["stdout"],
                    stderr=native.launch_args["stderr"],
                    start_new_session=True,
                )
                if self._lifeline is not None:
                    self._lifeline.hold(self._popen.pid)
            finally:
                native.launched()
        except OSError as exc:
            for fd in self._fds.values():
                os.close(fd)
            self._fds = {}
            if self._native is not None:
                self._native.close()
            raise KernelStartError(f"{self.who} could not be started: {exc}") from exc
        finally:
            if stdin >= 0:
                os.close(stdin)

    # -- the readers ----------------------------------------------------------------

    async def _event(self, event: Event) -> None:
        assert self._deliver is not None
        if isinstance(event, Ready):
            self._ready.set()
        elif isinstance(event, Exiting):
            self._announced = event.code
        elif isinstance(event, Output):
            await self._deliver(event, None)
        else:
            await self._deliver(event.item, event.request)

    async def _read_events(self, exited: anyio.Event) -> None:
        decoder = Decoder()
        fd = self._fds["events"]
        while True:
            data = read_available(fd)
            if data is None:
                return
            if not data:
                if exited.is_set():
                    return  # drained: the runner wrote everything before it ended
                with anyio.CancelScope() as self._waiting:
                    await anyio.wait_readable(fd)
                continue
            for event in decoder.feed(data):
                if isinstance(event, Keyed) and isinstance(event.item, Finished):
                    assert self._native is not None
                    await self._native.read_now()
                await self._event(event)
            # Data may be there again at once (a flood): other sessions get a turn each read.
            await checkpoint()

    async def _forward(self, output: Output) -> None:
        assert self._deliver is not None
        await self._deliver(output, None)

    async def _pump(self) -> None:
        """Read until the runner has ended and its output is drained; then say how it ended."""
        assert self._popen is not None and self._native is not None
        popen, native = self._popen, self._native
        exited = anyio.Event()
        try:
            with self._scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(native.read)

                    async def watch() -> None:
                        await await_exit(popen.pid)
                        exited.set()
                        self._waiting.cancel()

                    tg.start_soon(watch)
                    await self._read_events(exited)
                    tg.cancel_scope.cancel()
                await native.read_now()
        finally:
            self._gone = self.gone(self._poll(popen), self._announced)
            self._ended.set()

    def _poll(self, popen: subprocess.Popen[bytes]) -> int | None:
        """``popen.poll()``, released from the lifeline first if it has ended."""
        return popen.poll() if self._lifeline is None else self._lifeline.poll(popen)

    def gone(self, code: int | None, announced: int | None) -> Gone:
        """How the runner ended: its exit ``code``, and the one it ``announced`` if any."""
        if announced is not None:
            return Gone.exited(f"called process.exit({announced})", announced)
        return Gone(describe_exit(code, self.who), exit_code=code)
