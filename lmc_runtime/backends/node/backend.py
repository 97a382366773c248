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

from ...errors import BackendUnavailable
from ...messages import Message
from ..base import Availability, ExecutionOptions, SessionSettings
from ..jupyter.backend import kernels_dir
from ..turns import Turns, news_between_runs
from .execution import Execution
from .host import NodeHost

__all__ = ["NodeBackend", "NodeSession", "runner_path"]

#: Node's own parser and REPL rewrite of top-level await live behind this flag.
NODE_FLAGS = ("--expose-internals", "--no-warnings")


def runner_path() -> Path:
    """The runner script shipped in ``kernels/lmc-node``."""
    return kernels_dir() / "lmc-node" / "runner.js"


class NodeSession:
    """A persistent node process; one execution at a time."""

    language = "javascript"

    def __init__(self, host: NodeHost) -> None:
        self.host = host
        self._turns: Turns[Execution] = Turns(host.start_soon)

    async def _preamble(self, options: ExecutionOptions) -> AsyncIterator[Message]:
        """News from between runs: a death nobody saw, output that came late."""
        while True:
            await self.host.ensure_ready()
            gone, self.host.unreported_death = self.host.unreported_death, None
            late, dropped = self.host.late.take()
            death = (gone.description, gone.exit_code) if gone is not None else None
            for message in news_between_runs(
                options.reply_to, death=death, late=late, dropped=dropped, who="node"
            ):
                yield message
            if self.host.settled:
                return

    def execute(self, code: str, options: ExecutionOptions) -> AsyncIterator[Message]:
        async def begin(free: Callable[[], None]) -> Execution:
            route = await self.host.submit(code, lines=options.track_lines, tag=options.reply_to)
            run = Execution(self.host, route, options)
            run.on_finished = free
            return run

        return self._turns.take(lambda: self._preamble(options), begin)

    async def interrupt(self) -> None:
        await self._turns.interrupt()

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
