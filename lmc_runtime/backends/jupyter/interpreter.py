"""One Jupyter kernel as an :class:`~..core.Interpreter`, started through its provisioner.

A launch starts the kernel (adopting its sockets when it binds them in a shared
folder), connects a client, and returns once ``kernel_info`` is answered on
shell and IOPub and stdin is connected. Each message goes to the run whose
``execute_request`` it answers: a route's key is that request's ``msg_id``.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Mapping

import anyio
import zmq.asyncio
from anyio.abc import TaskGroup
from jupyter_client.kernelspec import KernelSpecManager

from ...errors import KernelStalled, KernelStartError
from ...procs import describe_exit
from ..base import ExecutionOptions, ForkingLauncher, SessionSettings
from ..checkpoints import StartFrom
from ..core import Deliver, Gone, Output, Route
from ..core.native import NativeOutput
from .channels import Channels
from .contexts import SharedContext
from .kernel import KernelInterpreter, execute_request
from .manager import Manager, adopt_sockets, reserve_sockets

__all__ = ["WHO", "JupyterInterpreter"]

logger = logging.getLogger(__name__)

WHO = "the kernel"
#: How long readiness waits for the probes' replies and for stdin, once shell and IOPub answer.
_STDIN_GRACE = 2.0
_KILL_BOUND = 5.0


def _nothing() -> None:
    pass


class JupyterInterpreter(KernelInterpreter[Channels]):
    """A kernel of kernelspec ``kernel_name``, its client and its readers.

    ``announces_input``: the kernel's startup code publishes input requests on
    IOPub too; ``native_output``: what the kernel process writes is the code's
    output (see :class:`~..core.native.NativeOutput`); ``iopub_mark``: IOPub's
    receive high-water mark (0: none; see :class:`.Channels`); ``contexts``: the
    ZMQ context it shares with its backend's other kernels (else one of its own).
    """

    def __init__(
        self,
        spec_manager: KernelSpecManager,
        kernel_name: str,
        settings: SessionSettings,
        env: Mapping[str, str],
        *,
        announces_input: bool = False,
        native_output: bool = False,
        iopub_mark: int = 0,
        contexts: SharedContext | None = None,
    ) -> None:
        super().__init__(announces_input=announces_input)
        self._contexts = contexts
        self._context: zmq.asyncio.Context | None = None
        self._iopub_mark = iopub_mark
        work_dir, shared_dir = settings.work_dir, settings.shared_dir
        sockets = f"{work_dir.name}-kernel"
        bound = (shared_dir or work_dir) / sockets
        self._km = Manager(
            kernel_name=kernel_name,
            kernel_spec_manager=spec_manager,
            # As the kernel sees it: the connection file gives it this.
            ip=settings.inside(bound),
            connection_file=str(work_dir / "connection.json"),
        )
        self._km.bound_ip = str(bound)
        if shared_dir is not None:
            self._km.host_ip = str(work_dir / sockets)
        elif self._km.ip != str(bound):
            self._km.host_ip = str(bound)
        self._shared, self._work_dir = shared_dir, work_dir
        wrap = settings.command if settings.launcher is not None else None
        fork = settings.launcher.fork if isinstance(settings.launcher, ForkingLauncher) else None
        origin = settings.origin.start_from() if settings.origin is not None else None
        self._launch_args = {
            "cwd": str(settings.host_cwd),
            "env": dict(env),
            "wrap_command": wrap,
            "fork_command": origin or fork,
            "lifeline": settings.lifeline,
        }
        self._startup_timeout = settings.timeouts.startup
        self._native_output = native_output
        self._native: NativeOutput | None = None
        self._ready = self._shut = False

    def start_with(self, start: StartFrom) -> None:
        """Start the kernel with ``start`` (from a checkpoint), not from nothing."""
        self._launch_args["fork_command"] = start

    def leave_files(self) -> None:
        """Its end leaves its connection file and sockets' paths: the kernel that
        replaces it, started while it ends, has the same ones."""
        self._km.cleanup_connection_file = self._km.cleanup_ipc_files = _nothing  # type: ignore[method-assign]

    async def launch(self, task_group: TaskGroup, deliver: Deliver) -> None:
        if self._contexts is not None and self._context is None:
            self._km.context = self._context = self._contexts.take()
            # Not the manager's to end (its shutdown ends a context it made).
            self._km._created_context = False
        conversation = self._converse(deliver)
        if self._shared is not None:
            reserve_sockets(self._km, self._shared)
        try:
            self._native = NativeOutput(
                self._forward if self._native_output else None, self._work_dir / "kernel.log"
            )
            await self._km.start_kernel(**self._launch_args, **self._native.launch_args)
        except Exception as exc:
            raise KernelStartError(f"the kernel could not be launched: {exc}") from exc
        finally:
            if self._native is not None:
                self._native.launched()
        task_group.start_soon(self._guarded, self._native.read)
        task_group.start_soon(self._guarded, self._watch)
        if self._shared is not None:
            await adopt_sockets(
                self._km,
                self._shared,
                self._work_dir,
                self._ended.wait,
                self._startup_timeout,
                self._tail,
            )
        client = self._km.client(context=self._km.context)  # one context to end, not two
        info = dict(self._km.get_connection_info())
        if self._km.host_ip is not None:
            client.ip = info["ip"] = self._km.host_ip
        self._channels = Channels(
            client, info, conversation.dispatch, conversation.needed, iopub_mark=self._iopub_mark
        )
        task_group.start_soon(self._guarded, self._channels.read)
        await self._until_ready(self._channels)

    async def submit(self, code: str, options: ExecutionOptions, route: Route) -> None:
        if self._channels is None:
            return  # the kernel has just ended: its watcher ends this run with that
        content, metadata = execute_request(code, options)
        self._channels.request("execute_request", content, metadata, msg_id=str(route.key))

    async def send_signal(self, signum: int) -> None:
        """SIGINT as the kernelspec says to interrupt; other signals to the kernel's group."""
        if signum == signal.SIGINT:
            await self._km.interrupt_kernel()
        else:
            await self._km.signal_kernel(signum)

    async def kill(self) -> None:
        try:
            await self._stop()
        finally:
            with anyio.CancelScope(shield=True):
                await self._give_back()

    async def _stop(self) -> None:
        self._stop_readers()
        for part in (self._channels, self._native):
            if part is not None:
                part.close()
        self._channels = self._native = None
        provisioner = self._km.provisioner
        if provisioner is None:
            return
        with anyio.move_on_after(_KILL_BOUND):
            await provisioner.kill()
            await provisioner.wait()
        if not self._shut:
            self._shut = True
            # Ending a ZMQ context joins its I/O thread: that waits in a worker thread.
            context = self._km.context if self._km._created_context else None
            self._km._created_context = False
            with anyio.move_on_after(_KILL_BOUND), contextlib.suppress(Exception):
                await self._km.shutdown_kernel(now=True)
            if context is not None:
                await anyio.to_thread.run_sync(context.destroy, 0)

    async def _give_back(self) -> None:
        """Close the manager's control socket (which its shutdown closes, if that
        was not cut short), and give the shared context back, once."""
        shared, self._context = self._context, None
        if shared is None or self._contexts is None:
            return
        control = getattr(self._km, "_control_socket", None)
        if control is not None and not control.closed:
            control.close(linger=0)
        await self._contexts.give_back(shared)

    async def _until_ready(self, channels: Channels) -> None:
        """Return once ``kernel_info`` is answered on shell and IOPub and stdin is connected."""
        assert self._conversation is not None
        conversation = self._conversation
        await conversation.probe(
            channels.request, self._ended, self._startup_timeout, channels.nudge
        )
        if self._gone is not None:
            detail = f":\n{self._gone.detail}" if self._gone.detail else ""
            raise KernelStartError(f"{self._gone.description} while starting{detail}")
        if not conversation.answered.is_set() and conversation.stalled:
            held = ", ".join(channels.holding()) or "none"
            raise KernelStalled(
                f"the kernel answered on IOPub but not on shell ({conversation.unanswered()};"
                f" channels holding unread messages: {held})"
            )
        if not conversation.answered.is_set():
            raise KernelStartError(
                f"the kernel did not become ready within {self._startup_timeout:g} s "
                f"({conversation.unanswered()}; its log: {self._tail() or 'empty'})"
            )
        # A probe still queued in the kernel could cost the first run its reply.
        with anyio.move_on_after(_STDIN_GRACE):
            await conversation.probes_replied.wait()
        # Never fatal: input requests are announced on IOPub too.
        with anyio.move_on_after(_STDIN_GRACE) as scope:
            await channels.stdin_connected()
        if scope.cancelled_caught:
            logger.warning("the kernel's stdin channel did not confirm its connection")
        self._ready = True
        if self._native is not None:
            self._native.mark()

    async def _exit_asked(self) -> None:
        """The code called ``exit()``: the kernel ends, and the run with it."""
        if not self._exiting and self._km.provisioner is not None:
            self._exiting = True
            await self._km.provisioner.kill()

    async def _forward(self, output: Output) -> None:
        assert self._deliver is not None
        await self._deliver(output, None)

    async def _watch(self) -> None:
        """Wait for the kernel to end, hand on what it said, then say how it ended."""
        code: int | None = None
        try:
            assert self._km.provisioner is not None, "watched once launched"
            code = await self._km.provisioner.wait()
            if self._ready and self._channels is not None:
                await self._channels.drain()
            if self._native is not None:
                await self._native.drained()
        finally:
            who = WHO if code is not None else "the kernel process"
            self._end(Gone(describe_exit(code, who), exit_code=code, detail=self._tail()))

    def _tail(self) -> str:
        return self._native.tail() if self._native is not None else ""
