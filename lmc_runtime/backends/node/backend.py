"""JavaScript on node: each session is one node process running ``kernels/lmc-node/runner.js``.

The process and its readers are the core's :class:`~..core.runner.RunnerInterpreter`;
everything else (turns, deadlines, the stop ladder, restarts) is the core's too.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import anyio

from ...procs import signal_group
from ..base import Availability, ExecutionOptions, SessionSettings
from ..core import Route, Supervisor, answers_fifo_reads
from ..core.runner import RunnerBackend, RunnerExecution, RunnerInterpreter
from ..kernelspecs import kernels_dir
from .interrupt import interrupt_sparing_reads

__all__ = ["NODE_FLAGS", "NodeBackend", "NodeExecution", "runner_path"]

logger = logging.getLogger(__name__)

#: Node's own parser and REPL rewrite of top-level await live behind this flag.
NODE_FLAGS = ("--expose-internals", "--no-warnings")


def runner_path() -> Path:
    """The runner script shipped in ``kernels/lmc-node``."""
    return kernels_dir() / "lmc-node" / "runner.js"


#: How long a stop request alone may take before a SIGINT follows.
ASK_FIRST = 0.05
#: How long ``node --version`` may take, for a node given by its path.
_PROBE_TIMEOUT = 10.0


class NodeExecution(RunnerExecution):
    """A run on node: its first line shows at once, then at most 50 lines a second.

    A stop goes to the runner by name (see :class:`~..core.runner.RunnerExecution`):
    a SIGINT that lands as one statement's ``breakOnSigint`` ends is held by node
    and raised in the next statement, so the signal goes only to code still running
    after :data:`ASK_FIRST`, and the runner takes one held before the run after a
    stop (``kernels/lmc-node/sigint.js``).

    With an input callback, the run holds the write end of node's stdin FIFO, and
    its reads are found in ``/proc`` (:func:`~..core.stdin.feed_stdin`). To stop
    code blocked reading it, the interrupt spares the read (see :mod:`.interrupt`)
    and at the first re-interrupt the write end closes: the read returns
    end-of-input and node ends the code there.
    """

    dwell = 0.0
    interval = 0.02

    def __init__(self, supervisor: Supervisor, route: Route, options: ExecutionOptions) -> None:
        super().__init__(supervisor, route, options)
        if self.stdin is not None and self.runner is not None:
            self.stdin_session = self.runner.pid
        #: The interrupt spared a read of the code's stdin.
        self._spared = False

    def answers_reads(self) -> bool:
        return answers_fifo_reads(self.options)

    async def interrupt_code(self) -> None:
        """Ask node to stop this run by name; SIGINT only for code that keeps it busy.

        A SIGINT while no statement runs is held by node and raised in a later
        one, so it goes only to code still running after :data:`ASK_FIRST`
        seconds; a read of the code's stdin node is blocked in is spared.
        """
        await super().interrupt_code()
        node, stdin = self.runner, self.stdin
        if node is None or node is not self.supervisor.current:
            return
        with anyio.move_on_after(ASK_FIRST):
            await self.route.finished.wait()
        if self.route.finished.is_set():
            return
        if stdin is None or stdin.closed:
            await node.send_signal(signal.SIGINT)
            return
        group = node.pid

        def interrupt() -> bool:
            readers = stdin.readers(group)
            if readers:
                return interrupt_sparing_reads(group, readers)
            signal_group(group, signal.SIGINT)
            return False

        self._spared = await anyio.to_thread.run_sync(interrupt) or self._spared

    async def again(self, runner: RunnerInterpreter) -> None:
        if not self._spared:
            await super().again(runner)
        self._spared = False


class NodeBackend(RunnerBackend):
    """Sessions on ``node``: the one on PATH, or the executable at ``node``."""

    who = "node"
    execution = NodeExecution

    def __init__(self, node: str | os.PathLike[str] | None = None) -> None:
        self._node = os.fspath(node) if node is not None else None

    def node(self) -> str | None:
        """The node to run: the one given (if executable) or the one on PATH; else None."""
        if self._node is None:
            return shutil.which("node")
        return self._node if os.path.isfile(self._node) and os.access(self._node, os.X_OK) else None

    def _problem(self) -> str | None:
        """Why the chosen node cannot run the runner, or None."""
        if self.node() is None:
            if self._node is None:
                return "node is not installed (no `node` on PATH): apt-get install nodejs"
            return f"there is no node executable at {self._node}"
        if self._node is not None and not re.fullmatch(r"v\d+\.\d+\.\d+\S*", self._version):
            return f"{self._node} is not node (`{self._node} --version` said {self._version!r})"
        if not runner_path().is_file():
            return f"its runner {runner_path()} is missing"
        return None

    @functools.cached_property
    def _version(self) -> str:
        """What the node given says to ``--version`` (asked once)."""
        assert self._node is not None
        return _version(self._node)

    def availability(self) -> Availability:
        problem = self._problem()
        return Availability.yes() if problem is None else Availability.no(problem)

    def runner_env(self) -> dict[str, str]:
        """Extra environment for the runner (a language it compiles from, say)."""
        return {}

    def environment(self, settings: SessionSettings) -> dict[str, str]:
        return {**super().environment(settings), "NO_COLOR": "1", **self.runner_env()}

    def runner_argv(self) -> list[str]:
        return [self.node() or "node", *NODE_FLAGS, str(runner_path())]


def _version(node: str) -> str:
    """What ``node --version`` prints (its first line), or why it printed nothing."""
    try:
        done = subprocess.run(
            [node, "--version"], capture_output=True, timeout=_PROBE_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"nothing ({exc})"
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    return lines[0] if lines else ""
