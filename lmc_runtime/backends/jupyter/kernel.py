"""One Jupyter kernel: its process, its lifecycle, and its recovery.

A :class:`JupyterKernel` owns an ``AsyncKernelManager`` and the kernel's
:class:`~.channels.Channels` (the readers and the routing by parent
``msg_id``). A pidfd tells the instant the process ends; a death nobody asked
for is reported to the open requests (or kept for the next one) and the kernel
is restarted. Start, restart and shutdown are serialized by one lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import anyio
from anyio.abc import TaskGroup
from jupyter_client.kernelspec import KernelSpecManager

from ...errors import KernelStartError
from .channels import Channels
from .manager import Manager, adopt_sockets, reserve_sockets
from .process import read_log_tail, wait_for_exit
from .routing import KernelGone, Route, describe_exit

__all__ = ["JupyterKernel"]

logger = logging.getLogger(__name__)


class JupyterKernel:
    """A kernel process, its client sockets and the router of their messages."""

    def __init__(
        self,
        spec_manager: KernelSpecManager,
        kernel_name: str,
        *,
        cwd: Path,
        work_dir: Path,
        shared_dir: Path | None = None,
        env: Mapping[str, str],
        startup_timeout: float,
        shutdown_timeout: float,
        announces_input: bool = False,
        wrap_command: Callable[[Sequence[str]], list[str]] | None = None,
    ) -> None:
        self._shared = shared_dir
        bind_dir = shared_dir if shared_dir is not None else work_dir
        self._km = Manager(
            kernel_name=kernel_name,
            kernel_spec_manager=spec_manager,
            transport="ipc",
            ip=str(bind_dir / f"{work_dir.name}-kernel"),
            connection_file=str(work_dir / "connection.json"),
        )
        self._km.wrap_command = wrap_command
        if shared_dir is not None:
            self._km.host_ip = str(work_dir / f"{work_dir.name}-kernel")
        self._work_dir = work_dir
        self._cwd = cwd
        #: The kernel publishes each input_request on IOPub too (lmc_startup.py).
        self.announces_input = announces_input
        self._env = dict(env)
        self._log_path = work_dir / "kernel.log"
        self._log: IO[bytes] | None = None
        self._startup_timeout = startup_timeout
        self._shutdown_timeout = shutdown_timeout
        self._channels: Channels | None = None
        self._generation = 0
        self._closing = False
        self._lifecycle = anyio.Lock()
        self._became_ready = False
        self._recovery = anyio.Event()
        self._recovery.set()
        self._task_group: TaskGroup | None = None
        #: Set when the kernel died with no request open; the next request reports it.
        self.unreported_death: KernelGone | None = None
        self.start_failure: BaseException | None = None

    # -- lifecycle ---------------------------------------------------------

    async def start(self, task_group: TaskGroup) -> None:
        """Launch the kernel, start the readers in ``task_group``, wait until ready."""
        self._task_group = task_group
        async with self._lifecycle:
            await self._launch()
            client = self._km.client()
            info = dict(self._km.get_connection_info())
            if self._km.host_ip is not None:
                client.ip = info["ip"] = self._km.host_ip
            self._channels = Channels(client, info)
            await task_group.start(self._channels.read_all)
            await self._ready()
            self._became_ready = True

    async def _launch(self, *, restart: bool = False) -> None:
        if self._log is None:
            self._log = open(self._log_path, "ab")  # noqa: SIM115 (lives as long as the kernel)
        if not restart:
            # Written before the launch so that it is readable by the sandbox's
            # user (jupyter-client writes it 0600); the folder is host-only.
            self._km.write_connection_file()
            os.chmod(self._km.connection_file, 0o644)
            self._reserve_sockets()
        try:
            if restart:
                await self._km.restart_kernel(now=True)
            else:
                await self._km.start_kernel(
                    cwd=str(self._cwd), env=self._env, stdout=self._log, stderr=self._log
                )
        except Exception as exc:
            raise KernelStartError(f"the kernel could not be launched: {exc}") from exc
        self._generation += 1
        process = getattr(self._km.provisioner, "process", None)
        if process is None or not isinstance(getattr(process, "pid", None), int):
            raise KernelStartError("the kernel was launched but its process is unknown")
        assert self._task_group is not None
        self._task_group.start_soon(self._watch, process, self._generation)
        await self._adopt_sockets(process)

    async def _adopt_sockets(self, process: Any) -> None:
        if self._shared is not None:
            await adopt_sockets(
                self._km,
                self._shared,
                self._work_dir,
                process,
                self._startup_timeout,
                self.log_tail,
            )

    def _reserve_sockets(self) -> None:
        if self._shared is not None:
            reserve_sockets(self._km, self._shared)

    def start_soon(self, func: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``func`` in the background, for as long as the session lives."""
        assert self._task_group is not None
        self._task_group.start_soon(func)

    async def restart(
        self, reason: str = "restarted on request", status: str = "restarted"
    ) -> None:
        """Replace the kernel process; open requests end with ``KernelGone``."""
        async with self._lifecycle:
            if self._closing:
                raise KernelStartError("the session is closed")
            self._generation += 1
            await self._broadcast(KernelGone(reason, intentional=True, status=status))
            try:
                await self._launch(restart=True)
                await self._ready()
            except KernelStartError as exc:
                self.start_failure = exc
                raise
            self.start_failure = None

    @property
    def settled(self) -> bool:
        """No restart under way or pending: a request sent now reaches a live kernel
        or, if that kernel dies, is told so."""
        return (
            self._recovery.is_set()
            and self.start_failure is None
            and not self._lifecycle.locked()
            and not self._closing
        )

    async def ensure_ready(self) -> None:
        """Wait for any restart in progress; retry one that failed."""
        await self._recovery.wait()
        async with self._lifecycle:
            failed = self.start_failure is not None
        if failed and not self._closing:
            await self.restart("restarted after a failed start")

    async def shutdown(self) -> None:
        """Stop the kernel and every process in its group, then the readers.

        A restart in flight is waited for (within the startup timeout), so it
        cannot launch a kernel after this one is gone.
        """
        self._closing = True
        with anyio.CancelScope(shield=True):
            self._generation += 1
            await self._broadcast(KernelGone("the session was closed", intentional=True))
            locked = False
            with anyio.move_on_after(self._startup_timeout):
                await self._lifecycle.acquire()
                locked = True
            try:
                await self._stop_process()
            finally:
                if locked:
                    self._lifecycle.release()
            if self._channels is not None:
                self._channels.close()
            if self._log is not None:
                self._log.close()

    async def _stop_process(self) -> None:
        pgid = getattr(self._km.provisioner, "pgid", None)
        try:
            with anyio.fail_after(self._shutdown_timeout):
                await self._km.shutdown_kernel(now=False)
        except Exception:
            logger.debug("graceful kernel shutdown failed; killing", exc_info=True)
            with contextlib.suppress(Exception):
                await self._km.shutdown_kernel(now=True)
        if pgid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    async def interrupt(self) -> None:
        """Send the kernel an interrupt (SIGINT to its process group)."""
        try:
            await self._km.interrupt_kernel()
        except Exception:  # a dead or restarting kernel: its watcher reports that
            logger.info("interrupting the kernel failed", exc_info=True)

    # -- requests ----------------------------------------------------------

    @property
    def channels(self) -> Channels:
        assert self._channels is not None, "the kernel has not been started"
        return self._channels

    def request(
        self,
        channel: str,
        msg_type: str,
        content: dict[str, Any],
        metadata: dict[str, Any] | None = None,
    ) -> Route:
        """Send a request and return the route its replies will arrive on."""
        return self.channels.request(channel, msg_type, content, metadata)

    def release(self, route: Route, retire_as: str | None = None) -> None:
        """Forget ``route`` (see :meth:`Channels.release`)."""
        self.channels.release(route, retire_as)

    def take_late(self) -> tuple[list[tuple[str, str, str]], int]:
        """Late output as (tag, stream name, text), and how many bytes were dropped."""
        return self.channels.take_late()

    def send_input(self, value: str) -> None:
        """Answer the kernel's ``input_request``."""
        self.channels.send_input(value)

    def log_tail(self, lines: int = 5) -> str:
        """The last lines the kernel process wrote to its own stdout/stderr."""
        return read_log_tail(self._log_path, lines)

    # -- internals ---------------------------------------------------------

    async def _ready(self) -> None:
        await self.channels.wait_ready(self._startup_timeout)

    async def _broadcast(self, item: KernelGone) -> None:
        if self._channels is not None:
            await self._channels.broadcast(item)

    async def _watch(self, process: Any, generation: int) -> None:
        """Wait for ``process`` (a Popen) to end; if nobody expected it, report and restart."""
        await wait_for_exit(process.pid, lambda: process.poll() is None)
        if generation != self._generation or self._closing:
            return
        code = process.poll()
        gone = KernelGone(describe_exit(code), exit_code=code, log_tail=self.log_tail())
        logger.warning("%s", gone.description)
        self._generation += 1
        if not self._became_ready:
            # Still starting: the start itself fails with this news; no restart.
            await self._broadcast(gone)
            return
        recovered = self._recovery = anyio.Event()
        try:
            if self.channels.open_requests:
                await self._broadcast(gone)
            else:
                self.unreported_death = gone
            async with self._lifecycle:
                if self._closing:
                    return
                await self._launch(restart=True)
                await self._ready()
                self.start_failure = None
        except KernelStartError as exc:
            logger.error("automatic kernel restart failed: %s", exc)
            self.start_failure = exc
        finally:
            recovered.set()
