"""A persistent shell for one language: one execution at a time, restarts when needed."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable

import anyio
from anyio.abc import TaskGroup

from ... import replies
from ...errors import KernelStartError
from ...messages import Message
from ..base import ExecutionOptions, SessionSettings
from ..turns import Once, Turns
from .dialect import Dialect
from .execution import ShellExecution
from .process import ExitInfo, ShellProcess
from .stdin import StdinSource

__all__ = ["ShellSession"]

logger = logging.getLogger(__name__)

#: Defaults for programs that would otherwise page or colour their output, and
#: for a virtualenv's ``activate``, which would otherwise set the prompt.
_QUIET_ENV = {
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "VIRTUAL_ENV_DISABLE_PROMPT": "1",
}


class ShellSession:
    """One shell process at a time (replaced when it dies), running cells in order."""

    def __init__(
        self,
        language: str,
        dialect: Dialect,
        program: str,
        settings: SessionSettings,
        task_group: TaskGroup,
    ) -> None:
        self.language = language
        self.dialect = dialect
        self._argv = settings.command(dialect.argv(program))
        self._settings = settings
        self._env = {**os.environ, **_QUIET_ENV, **settings.env}
        self._task_group = task_group
        self._proc: ShellProcess | None = None
        self._turns: Turns[ShellExecution] = Turns(task_group.start_soon)
        self._lifecycle = anyio.Lock()
        self._recovery = anyio.Event()
        self._recovery.set()
        self._start_failure: KernelStartError | None = None
        self._unreported: ExitInfo | None = None
        self._runs = 0
        self._last_reply_to: str | None = None
        self._closing = False

    # -- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        self._settings.work_dir.mkdir(parents=True, exist_ok=True)
        async with self._lifecycle:
            self._proc = await self._spawn()

    async def _spawn(self) -> ShellProcess:
        proc = ShellProcess(
            self.dialect,
            argv=self._argv,
            cwd=self._settings.cwd,
            env=self._env,
            work_dir=self._settings.work_dir,
            on_exit=self._on_exit,
        )
        await proc.start(self._task_group, self._settings.timeouts.startup)
        return proc

    def _on_exit(self, proc: ShellProcess, info: ExitInfo, reported: bool) -> None:
        """The shell ended by itself: restart it in the background."""
        if info.intentional or self._closing or proc is not self._proc:
            return
        logger.info("%s: %s", self.language, info.description)
        if not reported:
            self._unreported = info
        recovered = self._recovery = anyio.Event()

        async def recover() -> None:
            try:
                await self._replace_if(proc)
            finally:
                recovered.set()

        self._task_group.start_soon(recover)

    async def _replace_if(self, dead: ShellProcess | None) -> None:
        """Start a new shell if the current one is still ``dead`` (or missing)."""
        async with self._lifecycle:
            if self._closing or self._proc is not dead:
                return
            try:
                self._proc = await self._spawn()
                self._start_failure = None
            except KernelStartError as exc:
                logger.error("restarting the %s shell failed: %s", self.language, exc)
                self._proc, self._start_failure = None, exc

    async def _ready(self) -> ShellProcess:
        """The live shell, after any restart in progress; retries a failed start."""
        await self._recovery.wait()
        proc = self._proc
        if proc is None or proc.ended.is_set():
            await self._replace_if(proc)
        if self._proc is None:
            raise self._start_failure or KernelStartError("the shell is not running")
        return self._proc

    async def _recovered(self) -> str:
        try:
            await self._ready()
        except KernelStartError as exc:
            return f"restarting it failed ({exc}); the next run will try again"
        return "it has been restarted"

    async def _replace(self, reason: str, status: str) -> None:
        """End the shell on purpose (its cell is told ``reason``) and start a new one."""
        async with self._lifecycle:
            old = self._proc
            if old is not None:
                await old.kill(reason, status)
            if self._closing:
                return
            try:
                self._proc = await self._spawn()
                self._start_failure = None
            except KernelStartError as exc:
                self._proc, self._start_failure = None, exc

    # -- the Session protocol ---------------------------------------------------

    def execute(self, code: str, options: ExecutionOptions) -> AsyncIterator[Message]:
        proc: ShellProcess | None = None

        async def news() -> AsyncIterator[Message]:
            nonlocal proc
            proc = await self._ready()
            for message in self._news(proc, options.reply_to):
                yield message

        async def begin(free: Callable[[], None]) -> ShellExecution:
            assert proc is not None
            return await self._begin(proc, code, options, free)

        return self._turns.take(news, begin)

    async def _begin(
        self, proc: ShellProcess, code: str, options: ExecutionOptions, free: Callable[[], None]
    ) -> ShellExecution:
        """Write the cell to a file and have the shell source it."""
        self._runs += 1
        cell = self._settings.work_dir / f"cell-{self._runs}.{self.dialect.program}"
        cell.write_text(
            code if code.endswith("\n") or not code else code + "\n",
            encoding="utf-8",
            errors="replace",
        )
        stdin = StdinSource(self._settings.work_dir, self._runs, options.on_input is not None)
        run = ShellExecution(
            proc, self._runs, options, stdin, restart=self._replace, recover=self._recovered
        )

        def finished() -> None:
            free()
            cell.unlink(missing_ok=True)

        run.on_finished = Once(finished)
        self._last_reply_to = options.reply_to
        if proc.ended.is_set() and proc.info is not None:
            await run.gone(proc.info)
        else:
            proc.sink = run
            line = self.dialect.run_line(self._runs, cell, stdin.path, options.track_lines)
            try:
                proc.send(line)
            except OSError:
                logger.info("the shell's terminal closed under a new cell", exc_info=True)
        return run

    def _news(self, proc: ShellProcess, reply_to: str) -> list[Message]:
        """What happened since the last cell: a death, background jobs' output."""
        news = []
        gone, self._unreported = self._unreported, None
        if gone is not None:
            news.append(
                replies.notice(
                    f"Since the last run, {gone.description}. Its state was lost; "
                    "it has been restarted.",
                    "kernel_died",
                    reply_to,
                    state_lost=True,
                    exit_code=gone.exit_code,
                )
            )
        late, dropped = proc.take_late()
        if late:
            text = late.decode("utf-8", "replace")
            news.append(replies.output(text, self._last_reply_to or reply_to, late=True))
        if dropped:
            news.append(
                replies.notice(
                    f"{dropped} bytes of output from background jobs were dropped.",
                    "truncated",
                    reply_to,
                    omitted_bytes=dropped,
                )
            )
        return news

    async def interrupt(self) -> None:
        await self._turns.interrupt()

    async def restart(self) -> None:
        await self._replace("The shell was restarted on request", "restarted")

    async def aclose(self) -> None:
        self._closing = True
        with anyio.CancelScope(shield=True):
            async with self._lifecycle:
                proc, self._proc = self._proc, None
                if proc is not None:
                    with contextlib.suppress(Exception):
                        await proc.kill("The session was closed", "closed")
