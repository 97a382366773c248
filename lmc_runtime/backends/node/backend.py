"""JavaScript on node: each session is one node process running ``kernels/lmc-node/runner.js``.

See :mod:`.interpreter` for the process and its readers; everything else (turns,
deadlines, the stop ladder, restarts) is the core's.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

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


class NodeExecution(Execution):
    """A run on node: its first line shows at once, then at most 50 lines a second."""

    dwell = 0.0
    interval = 0.02


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
