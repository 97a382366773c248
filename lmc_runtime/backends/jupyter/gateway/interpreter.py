"""A Jupyter kernel on a gateway (Kernel Gateway, Enterprise Gateway) as an
:class:`~..core.Interpreter`: the second launcher beside the local provisioner.

A launch asks the gateway for a kernel of the language (``POST /api/kernels``),
opens its channels WebSocket, returns once ``kernel_info`` is answered on shell
and IOPub and the runtime's startup code (the gateway has its own kernelspecs)
has run as a silent request. Runs, their translation, deadlines and the stop
ladder are the local kernel's: an interrupt is ``POST .../interrupt``, a restart
shuts the kernel down (``DELETE``) and starts a fresh one, so no message of the
old kernel can reach a run of the new. A kernel the gateway lost is a death
like a local one, reported with ``state_lost``.

A channels connection that drops and is restored while a run is in flight
costs the messages that were on their way: the run gets a note saying output
may be missing, and a ``kernel_info_request`` follows, whose reply (on shell)
and status (on IOPub) come after every message of the run. If they come and
the run has not ended, its end was lost: a lost ``status: idle`` is supplied,
a lost ``execute_reply`` ends the run as a ``backend_error`` (the code did
finish; its outcome is unknown), so a run never waits for a message that will
not come.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import uuid
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ....errors import GatewayError, KernelStalled, KernelStartError
from ....replies import Status
from ...base import ExecutionOptions
from ...core import Deliver, Finished, Gone, Output, Route
from ...core.turns import first_of
from ..conversation import Conversation
from ..items import is_idle
from ..kernel import KernelInterpreter, execute_request
from .channels import GatewayChannels
from .rest import Gateway, GatewayClient

__all__ = ["GatewayInterpreter"]

logger = logging.getLogger(__name__)

_DROPPED = (
    "[lmc] the connection to the Jupyter gateway dropped and was restored; "
    "output sent meanwhile may be missing\n"
)
_END_LOST = "[lmc] the code finished on the gateway, but how it ended was lost in the drop\n"


@dataclass
class _InFlight:
    """The run in flight, and which of its ends (reply, idle) came."""

    key: str
    reply: dict[str, Any] | None = None
    idle: bool = False

    def see(self, channel: str, msg: dict[str, Any]) -> None:
        if channel == "shell" and msg.get("msg_type") == "execute_reply":
            self.reply = msg
        elif channel == "iopub" and is_idle(msg):
            self.idle = True

    @property
    def ended(self) -> bool:
        return self.reply is not None and self.idle


class GatewayInterpreter(KernelInterpreter[GatewayChannels]):
    """A kernel for ``language`` on ``gateway``, set up by ``startup`` (code of its language)."""

    def __init__(
        self,
        gateway: Gateway,
        language: str,
        startup: str,
        startup_timeout: float,
        *,
        announces_input: bool = False,
    ) -> None:
        super().__init__(announces_input=announces_input)
        self._gateway, self._language, self._startup = gateway, language, startup
        self._startup_timeout = startup_timeout
        self._client: GatewayClient | None = None
        self._kernel: str | None = None
        self._run: _InFlight | None = None
        #: Probes sent after reconnects: the run each is for, and the channels that answered.
        self._syncs: dict[str, tuple[str, set[str]]] = {}
        self._started = anyio.Event()
        self._startup_id = f"lmc-startup-{uuid.uuid4().hex}"
        self._startup_reply: dict[str, Any] = {}

    @property
    def kernel_id(self) -> str | None:
        """The kernel's id on the gateway, once it was started."""
        return self._kernel

    async def launch(self, task_group: TaskGroup, deliver: Deliver) -> None:
        self._client = client = GatewayClient(self._gateway)
        conversation = self._converse(deliver)
        try:
            with anyio.fail_after(self._startup_timeout):
                name = await client.kernel_name(self._language)
                self._kernel = await client.start_kernel(name)
                self._channels = GatewayChannels(
                    client, self._kernel, self._dispatch, self._reconnected
                )
                await self._channels.connect()
        except (GatewayError, TimeoutError) as exc:
            reason = str(exc) or f"no answer within {self._startup_timeout:g} s"
            raise KernelStartError(
                f"the kernel could not be started on the gateway: {reason}"
            ) from exc
        task_group.start_soon(self._guarded, self._watch)
        await self._until_ready(self._channels, conversation)

    async def _until_ready(self, channels: GatewayChannels, conversation: Conversation) -> None:
        """``kernel_info`` answered, then the startup code run (within the startup timeout)."""
        with anyio.move_on_after(self._startup_timeout):
            await conversation.probe(channels.request, self._ended, self._startup_timeout)
            if conversation.answered.is_set():
                content = {"code": self._startup, "silent": True, "store_history": False}
                channels.request("execute_request", content, {}, msg_id=self._startup_id)
                await first_of(self._started, self._ended)
        if self._gone is not None:
            raise KernelStartError(f"the kernel {self._gone.description} while starting")
        if not conversation.answered.is_set() and conversation.stalled:
            raise KernelStalled(
                f"the gateway's kernel answered on IOPub but not on shell "
                f"({conversation.unanswered()})"
            )
        if not conversation.answered.is_set():
            raise KernelStartError(
                f"the gateway's kernel did not become ready within {self._startup_timeout:g} s "
                f"({conversation.unanswered()})"
            )
        reply = self._startup_reply.get("content") or {}
        if not self._started.is_set():
            raise KernelStartError(
                f"the runtime's startup code did not finish within {self._startup_timeout:g} s"
            )
        if reply.get("status") != "ok":
            raise KernelStartError(
                "the runtime's startup code failed in the gateway's kernel: "
                f"{reply.get('ename', 'error')}: {reply.get('evalue', '')}"
            )

    async def submit(self, code: str, options: ExecutionOptions, route: Route) -> None:
        if self._channels is None or self._ended.is_set():
            return  # the kernel is gone: its watcher ends this run with that
        content, metadata = execute_request(code, options)
        self._run = _InFlight(str(route.key))
        self._channels.request("execute_request", content, metadata, msg_id=self._run.key)

    async def send_signal(self, signum: int) -> None:
        """SIGINT interrupts the kernel through the gateway; no other signal travels there."""
        if self._client is None or self._kernel is None:
            return
        if signum != signal.SIGINT:
            logger.warning("signal %d cannot be sent to a kernel on a gateway", signum)
            return
        await self._client.interrupt(self._kernel)

    async def kill(self) -> None:
        """Shut the kernel down on the gateway (bounded) and close the connections."""
        self._stop_readers()
        channels, client, kernel = self._channels, self._client, self._kernel
        self._channels = self._client = None
        with anyio.CancelScope(shield=True):
            if channels is not None:
                await channels.aclose()
            if client is None:
                return
            if kernel is not None:
                await client.shut_down(kernel)
            with contextlib.suppress(Exception):
                await client.aclose()

    async def _watch(self) -> None:
        """Read the channels until the kernel is gone, then say how it went."""
        reason = "was shut down"
        try:
            assert self._channels is not None
            reason = await self._channels.run()
        finally:
            self._end(Gone(f"the kernel on the gateway is gone: {reason}"))

    async def _dispatch(self, channel: str, msg: dict[str, Any]) -> None:
        parent = str((msg.get("parent_header") or {}).get("msg_id", ""))
        if parent == self._startup_id:
            if channel == "shell" and msg.get("msg_type") == "execute_reply":
                self._startup_reply = msg
                self._started.set()
            return
        if parent in self._syncs:
            await self._synced(parent, channel)
            return
        if self._run is not None and parent == self._run.key:
            self._run.see(channel, msg)
        assert self._conversation is not None
        await self._conversation.dispatch(channel, msg)

    async def _reconnected(self) -> None:
        """The channels are back: note the gap in the run in flight, and sync."""
        run = self._run
        if run is None or run.ended or self._channels is None or self._deliver is None:
            return
        await self._deliver(Output(_DROPPED, "stderr"), run.key)
        sync = self._channels.request("kernel_info_request", {}, {}, f"lmc-sync-{uuid.uuid4().hex}")
        self._syncs[sync] = (run.key, set())

    async def _synced(self, sync: str, channel: str) -> None:
        """Once shell and IOPub answered ``sync``, end its run if its end was lost."""
        key, answered = self._syncs[sync]
        answered.add(channel)
        if not {"shell", "iopub"} <= answered:
            return
        del self._syncs[sync]
        run = self._run
        if run is None or run.key != key or run.ended or self._deliver is None:
            return
        if run.reply is not None:  # only its idle was lost
            idle = {"msg_type": "status", "content": {"execution_state": "idle"}}
            await self._dispatch("iopub", {**idle, "parent_header": {"msg_id": run.key}})
            return
        self._run = None
        await self._deliver(Output(_END_LOST, "stderr"), run.key)
        await self._deliver(Finished(Status.BACKEND_ERROR, {"state_lost": False}), run.key)

    async def _exit_asked(self) -> None:
        """The code called ``exit()``: the kernel is shut down, and the run ends with it."""
        if self._exiting or self._client is None or self._kernel is None:
            return
        self._exiting = True
        await self._client.shut_down(self._kernel)
        if self._channels is not None:
            self._channels.stop("asked to exit")
