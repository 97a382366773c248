"""The node host: starts, watches and restarts the node process of one session.

One pump per process reads its events FIFO (and its native stdout and stderr)
the moment they are readable and hands each event to the open request's
:class:`Route`; output that comes with no request open is kept as late output.
A pidfd tells the instant node ends: an unexpected end is drained, reported to
the open request (or to the next one) and followed by a restart.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ...errors import KernelStartError
from .process import NodeProcess, describe_exit, read_available
from .protocol import Decoder, Done, Event, Exiting, Line, Output, Ready, encode_request
from .routing import Gone, LateOutput, Route

__all__ = ["NodeHost"]

logger = logging.getLogger(__name__)


class NodeHost:
    """The node process behind one session, through restarts."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        work_dir: Path,
        startup_timeout: float,
        shutdown_timeout: float,
    ) -> None:
        self._command = list(command)
        self._cwd = cwd
        self._env = dict(env)
        self._work_dir = work_dir
        self._startup_timeout = startup_timeout
        self._shutdown_timeout = shutdown_timeout
        self._task_group: TaskGroup | None = None
        self._process: NodeProcess | None = None
        self._ready = anyio.Event()
        self._lifecycle = anyio.Lock()
        self._recovery = anyio.Event()
        self._recovery.set()
        self._closing = False
        self._requests = 0
        self.route: Route | None = None
        self.late = LateOutput()
        #: Set when node died with no request open; the next request reports it.
        self.unreported_death: Gone | None = None
        self.start_failure: BaseException | None = None

    # -- lifecycle -------------------------------------------------------------

    async def start(self, task_group: TaskGroup) -> None:
        self._task_group = task_group
        async with self._lifecycle:
            await self._launch()

    async def _launch(self) -> None:
        self._ready = anyio.Event()
        process = NodeProcess.spawn(
            self._command, cwd=self._cwd, env=self._env, fifo_dir=self._work_dir
        )
        self._process = process
        assert self._task_group is not None
        self._task_group.start_soon(self._pump, process)
        try:
            with anyio.fail_after(self._startup_timeout):
                await self._ready.wait()
        except TimeoutError as exc:
            await process.stop(self._shutdown_timeout)
            raise KernelStartError(
                f"node did not become ready within {self._startup_timeout:g} s"
            ) from exc
        if self._process is not process or process.popen.poll() is not None:
            self._process = None
            tail = process.stderr_tail.decode("utf-8", "replace").strip()
            raise KernelStartError(
                f"{describe_exit(process.popen.poll())} while starting"
                + (f":\n{tail}" if tail else "")
            )

    def start_soon(self, func: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``func`` in the background, for as long as the session lives."""
        assert self._task_group is not None
        self._task_group.start_soon(func)

    async def restart(
        self, reason: str = "restarted on request", status: str = "restarted"
    ) -> None:
        """Replace the node process; an open request ends with an intentional ``Gone``."""
        async with self._lifecycle:
            if self._closing:
                raise KernelStartError("the session is closed")
            old, self._process = self._process, None
            if old is not None:
                await old.stop(self._shutdown_timeout)
            self._end_route(Gone(reason, intentional=True, status=status))
            try:
                await self._launch()
            except KernelStartError as exc:
                self.start_failure = exc
                raise
            self.start_failure = None

    @property
    def settled(self) -> bool:
        """No restart under way or pending: a request sent now reaches a live node."""
        return (
            self._recovery.is_set()
            and self.start_failure is None
            and not self._lifecycle.locked()
            and not self._closing
            and self._process is not None
        )

    async def ensure_ready(self) -> None:
        """Wait for a restart in progress; retry one that failed."""
        await self._recovery.wait()
        if (self.start_failure is not None or self._process is None) and not self._closing:
            await self.restart("restarted after a failed start")

    async def shutdown(self) -> None:
        """Stop node and every process in its group."""
        self._closing = True
        with anyio.CancelScope(shield=True):
            self._end_route(Gone("the session was closed", intentional=True, status="closed"))
            with anyio.move_on_after(self._startup_timeout):
                async with self._lifecycle:
                    process, self._process = self._process, None
                    if process is not None:
                        await process.stop(self._shutdown_timeout)

    # -- requests --------------------------------------------------------------

    async def submit(self, code: str, *, lines: bool, tag: str) -> Route:
        """Send ``code`` to node; its events arrive on the returned route."""
        process = self._process
        if process is None:
            raise KernelStartError("node is not running")
        self._requests += 1
        route = Route(self._requests)
        self.route = route
        self.late.tag = tag
        await process.send(encode_request(route.request, code, lines=lines))
        return route

    def release(self, route: Route) -> None:
        if self.route is route:
            self.route = None
        route.close()

    def interrupt(self) -> None:
        """SIGINT to node's process group: the code and the programs it started."""
        if self._process is not None:
            self._process.signal_group(signal.SIGINT)

    def _end_route(self, gone: Gone) -> None:
        route, self.route = self.route, None
        if route is not None:
            route.end(gone)

    # -- the pump ---------------------------------------------------------------

    async def _deliver(self, process: NodeProcess, event: Event) -> None:
        route = self.route
        if isinstance(event, Output):
            if route is not None and not route.finished.is_set():
                await route.put(event)
            else:
                self.late.keep(event)
        elif isinstance(event, Line | Done):
            if route is not None and route.request == event.request:
                await route.put(event)
        elif isinstance(event, Ready):
            if process is self._process:
                self._ready.set()
        elif isinstance(event, Exiting):
            process.exit_code_announced = event.code

    async def _read_events(self, process: NodeProcess, exited: anyio.Event) -> None:
        decoder = Decoder()
        fd = process.events_fd
        while True:
            data = read_available(fd)
            if data is None:
                return
            if not data:
                if exited.is_set():
                    return  # drained: node wrote everything before it ended
                with anyio.CancelScope() as waiting:
                    process.wait_scope = waiting
                    await anyio.wait_readable(fd)
                process.wait_scope = None
                continue
            for event in decoder.feed(data):
                await self._deliver(process, event)

    async def _read_native(self, process: NodeProcess, stream: str, fd: int) -> None:
        while True:
            await anyio.wait_readable(fd)
            data = read_available(fd)
            if data is None:
                return
            if data and stream == "stderr":
                process.stderr_tail = (process.stderr_tail + data)[-2048:]
            if data:
                await self._deliver(process, Output(stream, data.decode("utf-8", "replace")))

    async def _drain_native(self, process: NodeProcess) -> None:
        """What node and its children wrote natively before node ended."""
        for stream, fd in process.output_fds.items():
            while data := read_available(fd):
                if stream == "stderr":
                    process.stderr_tail = (process.stderr_tail + data)[-2048:]
                await self._deliver(process, Output(stream, data.decode("utf-8", "replace")))

    async def _pump(self, process: NodeProcess) -> None:
        exited = anyio.Event()
        with process.scope:
            async with anyio.create_task_group() as tg:
                for stream, fd in process.output_fds.items():
                    tg.start_soon(self._read_native, process, stream, fd)

                async def watch() -> None:
                    await process.wait_exit()
                    exited.set()
                    if process.wait_scope is not None:
                        process.wait_scope.cancel()

                tg.start_soon(watch)
                await self._read_events(process, exited)
                await self._drain_native(process)
                tg.cancel_scope.cancel()
            await self._died(process)

    async def _died(self, process: NodeProcess) -> None:
        """Node ended on its own: report it and start a new one."""
        if process is not self._process or self._closing:
            return
        if not self._ready.is_set():  # still starting: the start fails with this news
            process.close()
            self._ready.set()
            return
        code = process.popen.poll()
        announced = process.exit_code_announced
        process.signal_group(signal.SIGKILL)  # children it left behind
        process.close()
        self._process = None
        if announced is not None:
            gone = Gone(
                f"the code called process.exit({announced})",
                exit_code=announced,
                exited_by_code=True,
            )
        else:
            gone = Gone(describe_exit(code), exit_code=code)
        logger.log(logging.INFO if gone.exited_by_code else logging.WARNING, "%s", gone.description)
        recovered = self._recovery = anyio.Event()
        try:
            if self.route is not None:
                self._end_route(gone)
            else:
                self.unreported_death = gone
            async with self._lifecycle:
                if self._closing:
                    return
                await self._launch()
                self.start_failure = None
        except KernelStartError as exc:
            logger.error("restarting node failed: %s", exc)
            self.start_failure = exc
        finally:
            recovered.set()
