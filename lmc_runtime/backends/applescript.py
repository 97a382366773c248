"""AppleScript on macOS: each run is one ``osascript SCRIPT`` process, on the core.

Nothing carries over between runs, so the interpreter has no process of its
own between them: :meth:`OsascriptInterpreter.submit` starts one per run in
its own process group, with the run's own environment variables on top of the
session's, and streams its stdout and stderr. The core keeps the deadline; the
ladder's harder rung is SIGKILL to the run's group.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping

import anyio
from anyio.abc import ByteReceiveStream, Process, TaskGroup

from .. import replies
from ..errors import BackendUnavailable, KernelStartError
from ..messages import Message
from ..procs import describe_exit, signal_group
from ..replies import Status
from .base import Availability, ExecutionOptions, SessionSettings
from .core import Deliver, Execution, Finished, Gone, Output, Route, SupervisedBackend

__all__ = ["NEEDS_MACOS", "AppleScriptBackend", "OsascriptInterpreter"]

#: The reply on any system but macOS.
NEEDS_MACOS = "AppleScript needs macOS (osascript); this machine runs {system}"


class OsascriptInterpreter:
    """One ``osascript`` process per run; between runs, nothing runs."""

    def __init__(self, osascript: str, settings: SessionSettings, env: Mapping[str, str]) -> None:
        self._osascript = osascript
        self._settings = settings
        self._env = dict(env)
        self._task_group: TaskGroup | None = None
        self._deliver: Deliver | None = None
        self._process: Process | None = None
        self._closed = anyio.Event()
        self._runs = 0

    async def launch(self, task_group: TaskGroup, deliver: Deliver) -> None:
        self._task_group, self._deliver = task_group, deliver

    async def submit(self, code: str, options: ExecutionOptions, route: Route) -> None:
        self._runs += 1
        script = self._settings.work_dir / f"script-{self._runs}.applescript"
        script.write_text(code if code.endswith("\n") else code + "\n", encoding="utf-8")
        try:
            process = await anyio.open_process(
                self._settings.command([self._osascript, str(script)]),
                stdin=subprocess.DEVNULL,
                cwd=self._settings.host_cwd,
                env={**self._env, **options.env},
                start_new_session=True,
            )
        except OSError as exc:
            raise KernelStartError(f"{self._osascript} could not be started: {exc}") from exc
        self._process = process
        assert self._task_group is not None
        self._task_group.start_soon(self._drive, process, route.key)

    async def _drive(self, process: Process, key: object) -> None:
        assert self._deliver is not None and process.stdout and process.stderr
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._pump, process.stdout, "stdout", key)
            tg.start_soon(self._pump, process.stderr, "stderr", key)
            code = await process.wait()
            # Children still holding the pipes would keep the run open.
            signal_group(process.pid, signal.SIGKILL)
        if code < 0:
            notice = describe_exit(code, "osascript") + "."
            await self._deliver(replies.notice(notice, Status.ERROR, None), key)
        status = Status.OK if code == 0 else Status.ERROR
        extras = {"exit_code": code, "state_lost": False}
        await self._deliver(Finished(status, extras), key)

    async def _pump(self, stream: ByteReceiveStream, name: str, key: object) -> None:
        assert self._deliver is not None
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
            async for chunk in stream:
                await self._deliver(Output(decoder.decode(chunk), name), key)
        await self._deliver(Output(decoder.decode(b"", final=True), name), key)

    async def send_signal(self, signum: int) -> None:
        if self._process is not None and self._process.returncode is None:
            signal_group(self._process.pid, signum)

    async def wait(self) -> Gone:
        await self._closed.wait()
        return Gone.on_purpose("osascript was stopped", Status.CLOSED)

    async def kill(self) -> None:
        await self.send_signal(signal.SIGKILL)
        self._closed.set()


class OsascriptExecution(Execution):
    """A run of one process: a process that ignores the interrupt is killed."""

    killed = False

    async def escalate(self) -> bool:
        self.killed = True
        current = self.supervisor.current
        if current is not None:
            await current.send_signal(signal.SIGKILL)
        return True

    def finish(self, done: Finished) -> list[Message]:
        if self.killed:
            grace = self.options.interrupt_grace
            note = f" It did not stop within {grace:g} s of an interrupt, so osascript was killed."
            done = Finished(done.status, done.extras, note)
        return super().finish(done)


class AppleScriptBackend(SupervisedBackend):
    """``osascript`` on macOS; elsewhere a clear reason.

    ``platform`` is ``sys.platform`` unless given; ``path`` is where to look
    for ``osascript`` (the process's PATH unless given). Both are here so the
    macOS path can be exercised anywhere with a stand-in ``osascript``.
    """

    who = "osascript"
    execution = OsascriptExecution

    def __init__(
        self, *, platform: str | None = None, osascript: str = "osascript", path: str | None = None
    ) -> None:
        self.platform = platform if platform is not None else sys.platform
        self.osascript = osascript
        self.path = path

    def find_osascript(self) -> str | None:
        """The ``osascript`` this backend would run, or None."""
        path = self.path if self.path is not None else os.environ.get("PATH", os.defpath)
        return shutil.which(self.osascript, path=path)

    def availability(self) -> Availability:
        if self.platform != "darwin":
            return Availability.no(NEEDS_MACOS.format(system=self.platform))
        if self.find_osascript() is None:
            return Availability.no(f"{self.osascript} was not found on PATH")
        return Availability.yes()

    def interpreter(
        self, settings: SessionSettings, env: Mapping[str, str]
    ) -> OsascriptInterpreter:
        osascript = self.find_osascript()
        availability = self.availability()
        if osascript is None or not availability.available:
            raise BackendUnavailable("applescript", availability.reason or "osascript is missing")
        return OsascriptInterpreter(osascript, settings, env)
