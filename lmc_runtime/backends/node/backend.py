"""JavaScript on node: each session is one node process running ``kernels/lmc-node/runner.js``.

See :mod:`.interpreter` for the process and its readers; everything else (turns,
deadlines, the stop ladder, restarts) is the core's.
"""

from __future__ import annotations

import shutil
import signal
from collections.abc import Mapping
from pathlib import Path

import anyio

from ..base import Availability, SessionSettings
from ..core import Execution, SupervisedBackend
from ..kernelspecs import kernels_dir
from .interpreter import NodeInterpreter

__all__ = ["NODE_FLAGS", "NodeBackend", "runner_path"]

#: Node's own parser and REPL rewrite of top-level await live behind this flag.
NODE_FLAGS = ("--expose-internals", "--no-warnings")


def runner_path() -> Path:
    """The runner script shipped in ``kernels/lmc-node``."""
    return kernels_dir() / "lmc-node" / "runner.js"


#: How often an interrupt is sent again until node says the run stopped.
REINTERRUPT = 0.2


class NodeExecution(Execution):
    """A run on node: its first line shows at once, then at most 50 lines a second.

    An interrupt is sent again every :data:`REINTERRUPT` seconds until node
    reports the run over: a SIGINT that lands just as one statement's
    ``breakOnSigint`` ends is dropped by node (its listeners are swapped then).
    Only the node that got the first one is signalled again, never its successor.
    """

    dwell = 0.0
    interval = 0.02

    async def background(self) -> None:
        await self.route.attention.wait()
        target = self.supervisor.current
        finished = self.route.finished
        while target is not None and not finished.is_set():
            with anyio.move_on_after(REINTERRUPT):
                await finished.wait()
            if not finished.is_set() and target is self.supervisor.current:
                await target.send_signal(signal.SIGINT)


class NodeBackend(SupervisedBackend):
    """Sessions on the ``node`` found on PATH."""

    who = "node"
    execution = NodeExecution

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

    def runner_env(self) -> dict[str, str]:
        """Extra environment for the runner (a language it compiles from, say)."""
        return {}

    def environment(self, settings: SessionSettings) -> dict[str, str]:
        return {**super().environment(settings), "NO_COLOR": "1", **self.runner_env()}

    def interpreter(self, settings: SessionSettings, env: Mapping[str, str]) -> NodeInterpreter:
        node = self.node() or "node"
        return NodeInterpreter(
            settings.command([node, *NODE_FLAGS, str(runner_path())]),
            cwd=settings.cwd,
            env=env,
            fifo_dir=settings.work_dir,
            startup_timeout=settings.timeouts.startup,
        )
