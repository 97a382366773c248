"""JavaScript on node: each session is one node process running ``kernels/lmc-node/runner.js``.

See :mod:`.interpreter` for the process and its readers; everything else (turns,
deadlines, the stop ladder, restarts) is the core's.
"""

from __future__ import annotations

import logging
import shutil
import signal
from collections.abc import Mapping
from pathlib import Path

import anyio

from ..base import Availability, ExecutionOptions, SessionSettings
from ..core import Execution, Route, StdinChannel, SupervisedBackend, Supervisor, feed_stdin
from ..core.procs import signal_group
from ..kernelspecs import kernels_dir
from .interpreter import NodeInterpreter
from .interrupt import interrupt_sparing_reads

__all__ = ["NODE_FLAGS", "NodeBackend", "NodeExecution", "runner_path"]

logger = logging.getLogger(__name__)

#: Node's own parser and REPL rewrite of top-level await live behind this flag.
NODE_FLAGS = ("--expose-internals", "--no-warnings")


def runner_path() -> Path:
    """The runner script shipped in ``kernels/lmc-node``."""
    return kernels_dir() / "lmc-node" / "runner.js"


#: How often an interrupt is sent again until node says the run stopped.
REINTERRUPT = 0.2
#: How long a stop request alone may take before a SIGINT follows.
ASK_FIRST = 0.05


class NodeExecution(Execution):
    """A run on node: its first line shows at once, then at most 50 lines a second.

    A stop is asked again every :data:`REINTERRUPT` seconds until node reports
    the run over, on the control FIFO and naming the run: a SIGINT that lands
    just as one statement's ``breakOnSigint`` ends is held back by node and
    raised later, so a second signal could stop the next run instead.

    With an input callback, the run holds the write end of node's stdin FIFO
    and the core's feeder answers reads there. To stop code blocked in such a
    read, the interrupt spares the read (see :mod:`.interrupt`) and, at the
    first re-interrupt, the write end closes instead of a second signal: the
    read returns end-of-input and node ends the code there, never past it.
    (A read made outside ``breakOnSigint``, after an ``await`` in the same
    statement, is not ended by node: the code goes on to its next ``await``.)
    """

    dwell = 0.0
    interval = 0.02

    def __init__(self, supervisor: Supervisor, route: Route, options: ExecutionOptions) -> None:
        super().__init__(supervisor, route, options)
        node = supervisor.current
        #: The node this run went to, with its stdin's write end (with a callback).
        self.node = node if isinstance(node, NodeInterpreter) else None
        self.stdin: StdinChannel | None = None
        if options.on_input is not None and self.node is not None:
            try:
                self.stdin = StdinChannel.writer(self.node.stdin_path)
            except OSError:  # node is gone: its watcher says so
                logger.info("node's stdin could not be opened", exc_info=True)
        #: The interrupt spared a read of the code's stdin.
        self._spared = False

    async def interrupt_code(self) -> None:
        """Ask node to stop this run by name; SIGINT only for code that keeps it busy.

        Code that awaits is stopped by the request alone. A SIGINT that comes
        while no statement runs is held by node and raised in a later one, so
        it only goes to code still running after :data:`ASK_FIRST` seconds
        (synchronous code, which it stops at once); a read of the code's stdin
        that node is blocked in is spared.
        """
        node, stdin = self.node, self.stdin
        if node is None or node is not self.supervisor.current:
            await super().interrupt_code()
            return
        await node.stop(self.route)
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

    async def background(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                if self.stdin is not None and self.node is not None:
                    tg.start_soon(feed_stdin, self, self.stdin, self.node.pid)
                await self._reinterrupt()
        finally:
            self._close_stdin()

    async def _reinterrupt(self) -> None:
        await self.route.attention.wait()
        target = self.supervisor.current
        finished = self.route.finished
        while target is not None and not finished.is_set():
            with anyio.move_on_after(REINTERRUPT):
                await finished.wait()
            if finished.is_set() or target is not self.supervisor.current:
                continue
            if not self._spared and isinstance(target, NodeInterpreter):
                await target.stop(self.route)
            self._spared = False
            self._close_stdin()

    def _close_stdin(self) -> None:
        if self.stdin is not None:
            self.stdin.close()


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
