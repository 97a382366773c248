"""An AppleScript session: a fresh ``osascript`` process for every execution."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from ...errors import KernelStartError
from ...messages import Message
from ..base import ExecutionOptions, SessionSettings
from ..turns import Once
from .run import ProcessRun

__all__ = ["AppleScriptSession"]


class AppleScriptSession:
    """Runs each execution as ``osascript SCRIPT``; one execution at a time.

    AppleScript keeps no state between executions here: each one is its own
    process, so a restart has nothing to reset.
    """

    language = "applescript"

    def __init__(self, osascript: str, settings: SessionSettings, task_group: TaskGroup) -> None:
        self.osascript = osascript
        self.settings = settings
        self._task_group = task_group
        self._busy = anyio.Semaphore(1)  # released once the process has ended
        self._current: ProcessRun | None = None
        self._count = 0

    def _script(self, code: str) -> Path:
        self._count += 1
        path = self.settings.work_dir / f"script-{self._count}.applescript"
        path.write_text(code if code.endswith("\n") else code + "\n", encoding="utf-8")
        return path

    async def execute(self, code: str, options: ExecutionOptions) -> AsyncIterator[Message]:
        await self._busy.acquire()
        try:
            script = self._script(code)
        except BaseException:
            self._busy.release()
            raise

        def done() -> None:
            script.unlink(missing_ok=True)
            self._busy.release()

        free = Once(done)
        run: ProcessRun | None = None
        finished = False
        try:
            try:
                process = await anyio.open_process(
                    self.settings.command([self.osascript, str(script)]),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=self.settings.cwd,
                    env={**os.environ, **self.settings.env},
                    start_new_session=True,
                )
            except OSError as exc:
                raise KernelStartError(f"{self.osascript} could not be started: {exc}") from exc
            run = ProcessRun("osascript", process, options)
            self._current = run
            self._task_group.start_soon(run.drive, free)
            async with run.receive:
                async for message in run.receive:
                    finished = message.format == "active_line" and message.content is None
                    yield message
        finally:
            if self._current is run:
                self._current = None
            if run is None:
                free()
            elif not finished:
                # The caller stopped listening: stop the code too.
                run.request_stop("interrupt")

    async def interrupt(self) -> None:
        if self._current is not None:
            self._current.request_stop("interrupt")

    async def restart(self) -> None:
        """Nothing persists between executions; a running one is interrupted."""
        await self.interrupt()

    async def aclose(self) -> None:
        """Stop a running execution; its process is killed if SIGINT is not enough."""
        await self.interrupt()
