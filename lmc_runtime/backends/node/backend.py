"""JavaScript on node: the backend and its sessions.

Each session is one node process running ``kernels/lmc-node/runner.js``;
see :mod:`.host` for how it is watched and :mod:`.execution` for one run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from ... import replies
from ...errors import BackendUnavailable
from ...messages import Message
from ..base import Availability, ExecutionOptions, SessionSettings
from ..jupyter.backend import kernels_dir
from .execution import Execution
from .host import NodeHost

__all__ = ["NodeBackend", "NodeSession", "runner_path"]

#: Node's own parser and REPL rewrite of top-level await live behind this flag.
NODE_FLAGS = ("--expose-internals", "--no-warnings")


def runner_path() -> Path:
    """The runner script shipped in ``kernels/lmc-node``."""
    return kernels_dir() / "lmc-node" / "runner.js"


class _Once:
    """Calls ``func`` the first time it is called, and never again."""

    def __init__(self, func: Callable[[], None]) -> None:
        self._func: Callable[[], None] | None = func

    def __call__(self) -> None:
        func, self._func = self._func, None
        if func is not None:
            func()


class NodeSession:
    """A persistent node process; one execution at a time."""

    language = "javascript"

    def __init__(self, host: NodeHost) -> None:
        self.host = host
        self._busy = anyio.Semaphore(1)  # released by whichever task closes the stream
        self._current: Execution | None = None

    async def _preamble(self, options: ExecutionOptions) -> AsyncIterator[Message]:
        """News from between runs: a death nobody saw, output that came late."""
        while True:
            await self.host.ensure_ready()
            gone, self.host.unreported_death = self.host.unreported_death, None
            if gone is not None:
                yield replies.notice(
                    f"Since the last run, {gone.description}. Its state was lost; "
                    "node has been restarted.",
                    "kernel_died",
                    options.reply_to,
                    state_lost=True,
                    exit_code=gone.exit_code,
                )
            late, dropped = self.host.late.take()
            for tag, stream, text in late:
                extras = {"stream": stream} if stream == "stderr" else {}
                yield replies.output(text, tag, late=True, **extras)
            if dropped:
                yield replies.notice(
                    f"{dropped} bytes of late output from earlier code were dropped.",
                    "truncated",
                    options.reply_to,
                    omitted_bytes=dropped,
                )
            if self.host.settled:
                return

    async def execute(self, code: str, options: ExecutionOptions) -> AsyncIterator[Message]:
        await self._busy.acquire()
        free = _Once(self._busy.release)
        watching = False
        run: Execution | None = None
        try:
            async for message in self._preamble(options):
                yield message
            route = await self.host.submit(code, lines=options.track_lines, tag=options.reply_to)
            run = Execution(self.host, route, options)
            run.on_finished = free
            self._current = run
            self.host.start_soon(run.watch)
            watching = True
            async for message in run.messages():
                yield message
        finally:
            if self._current is run:
                self._current = None
            if run is not None and not run.complete:
                # The caller stopped listening: stop the code too; the watchdog
                # frees the session once node is done or restarted.
                with anyio.CancelScope(shield=True):
                    await run.request_stop("interrupt")
            if not watching:
                free()

    async def interrupt(self) -> None:
        run = self._current
        if run is not None:
            await run.request_stop("interrupt")

    async def restart(self) -> None:
        await self.host.restart()

    async def aclose(self) -> None:
        await self.host.shutdown()


class NodeBackend:
    """Starts :class:`NodeSession` objects on the ``node`` found on PATH."""

    name = "javascript"
    aliases: tuple[str, ...] = ("js", "node", "nodejs")

    def node(self) -> str | None:
        """The node executable, or None."""
        return shutil.which("node")

    def availability(self) -> Availability:
        if self.node() is None:
            return Availability.no(
                "node is not installed (no `node` on PATH): apt-get install nodejs"
            )
        if not runner_path().is_file():
            return Availability.no(f"its runner {runner_path()} is missing")
        return Availability.yes()

    async def start(self, task_group: TaskGroup, settings: SessionSettings) -> NodeSession:
        node = self.node()
        if node is None:
            raise BackendUnavailable(self.name, "node is not installed")
        settings.work_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "NO_COLOR": "1", **settings.env}
        host = NodeHost(
            settings.command([node, *NODE_FLAGS, str(runner_path())]),
            cwd=settings.cwd,
            env=env,
            work_dir=settings.work_dir,
            startup_timeout=settings.timeouts.startup,
            shutdown_timeout=settings.timeouts.shutdown,
        )
        try:
            await host.start(task_group)
        except BaseException:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await host.shutdown()
            raise
        return NodeSession(host)
