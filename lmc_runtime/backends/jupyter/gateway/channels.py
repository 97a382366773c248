"""A gateway kernel's channels: one WebSocket carrying the Jupyter messages as JSON,
each with its ``channel``, reconnected when it drops.

A dropped connection is tried again with backoff for ``Gateway.reconnect``
seconds: if the gateway still has the kernel, reading goes on (the gateway
replays what it buffered for this session, though not what was in flight when
the connection dropped), ``reconnected`` is awaited and what was to be sent goes out;
if it answers that the kernel is gone, or cannot be reached in time, the
kernel counts as lost. The gateway's own word that the kernel died (a status
``restarting`` or ``dead`` of its own, a ``shutdown_reply`` nobody here asked
for) ends it too. :meth:`GatewayChannels.run` returns why the kernel is gone.

Latency: Kernel Gateway and Enterprise Gateway write the frames without
``TCP_NODELAY`` (tornado's default, and neither has a setting for it), so a
small frame written while the one before is unacknowledged waits for that ACK,
which Linux delays by up to 40 ms on a connection that looks interactive. With
``Gateway.quick_ack`` (the default) this side acknowledges at once what it
reads (``TCP_QUICKACK``, set again after each frame since Linux clears it), so
the gateway's frames follow each other without that wait.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ....errors import GatewayError, MissingExtra
from ..channels import Dispatch
from .rest import GatewayClient

__all__ = ["GatewayChannels"]

logger = logging.getLogger(__name__)

_OUTBOX = 1024
_FIRST_DELAY, _MAX_DELAY = 0.1, 2.0
_OPEN_BOUND = 10.0
#: Linux's option for acknowledging received data at once (None elsewhere).
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)

try:
    import websockets
    from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
except ImportError as exc:  # the [gateway] extra
    raise MissingExtra("kernels on a Jupyter gateway", "gateway", missing=exc.name) from exc


def kernel_gone(msg: Mapping[str, Any]) -> str | None:
    """Why ``msg`` says the kernel is gone (the gateway's own status or a shutdown), or None."""
    if msg.get("channel") != "iopub":
        return None
    msg_type, content = msg.get("msg_type"), msg.get("content") or {}
    parent = (msg.get("parent_header") or {}).get("msg_id")
    state = content.get("execution_state")
    if msg_type == "status" and not parent and state == "restarting":
        return "the gateway found its process ended (and restarted it with a blank state)"
    if msg_type == "status" and not parent and state == "dead":
        return "the gateway found its process ended and could not restart it"
    if msg_type == "shutdown_reply":
        return "it was shut down on the gateway"
    return None


class GatewayChannels:
    """The channels of kernel ``kernel_id``: reading, sending, reconnecting."""

    def __init__(
        self,
        client: GatewayClient,
        kernel_id: str,
        dispatch: Dispatch,
        reconnected: Callable[[], Awaitable[None]],
    ) -> None:
        self._client, self._kernel, self._dispatch = client, kernel_id, dispatch
        self._reconnected = reconnected
        self.session = uuid.uuid4().hex
        self._ws: Any = None
        self._socket: socket.socket | None = None
        self._swapped = anyio.Event()
        send, outbox = anyio.create_memory_object_stream[str](_OUTBOX)
        self._send: MemoryObjectSendStream[str] = send
        self._outbox: MemoryObjectReceiveStream[str] = outbox
        self._stopped: str | None = None

    async def connect(self) -> None:
        """Open the first connection; GatewayError if it cannot be opened."""
        self._use(await self._open())

    def _use(self, ws: Any) -> None:
        """Read and send on ``ws`` from now on, with its socket's ACKs tuned."""
        self._ws, self._socket = ws, None
        if not self._client.gateway.quick_ack or _QUICKACK is None:
            return
        found = ws.transport.get_extra_info("socket")
        if found is not None and found.family in (socket.AF_INET, socket.AF_INET6):
            self._socket = found
            self._ack_now()

    def _ack_now(self) -> None:
        """Acknowledge what was read at once, and the next segments too (Linux clears it)."""
        if self._socket is not None and _QUICKACK is not None:
            with contextlib.suppress(OSError):
                self._socket.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)

    async def _open(self) -> Any:
        gateway = self._client.gateway
        url = gateway.channels_url(self._kernel, self.session)
        where = f"the Jupyter gateway at {gateway.url}"
        try:
            return await websockets.connect(
                url, additional_headers=gateway.headers, max_size=None, open_timeout=_OPEN_BOUND
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            raise GatewayError(
                f"{where} refused the channels of kernel {self._kernel} (HTTP {status})",
                status=status,
            ) from exc
        except (OSError, TimeoutError, WebSocketException) as exc:
            raise GatewayError(f"{where} cannot be reached: {exc}") from exc

    async def run(self) -> str:
        """Read and send until the kernel is gone; why it is."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._writer)
            reason = await self._reader()
            tg.cancel_scope.cancel()
        return reason

    async def _reader(self) -> str:
        while True:
            try:
                async for raw in self._ws:
                    self._ack_now()
                    reason = await self._take(raw)
                    if reason is not None:
                        return reason
            except ConnectionClosed as exc:
                logger.info("the channels of kernel %s dropped: %s", self._kernel, exc)
            if self._stopped is not None:
                return self._stopped
            reason = await self._reconnect()
            if reason is not None:
                return reason
            await self._reconnected()

    async def _take(self, raw: str | bytes) -> str | None:
        """Hand one frame on; why the kernel is gone, if the frame says so."""
        if self._stopped is not None:
            return self._stopped
        if isinstance(raw, bytes):  # a message with binary buffers (widgets): not needed
            logger.debug("skipped a binary frame of kernel %s", self._kernel)
            return None
        try:
            msg = json.loads(raw)
            channel = str(msg["channel"])
        except (ValueError, KeyError, TypeError):
            logger.warning("dropped an unreadable message of kernel %s", self._kernel)
            return None
        reason = kernel_gone(msg)
        if reason is not None:
            return reason
        await self._dispatch(channel, msg)
        return self._stopped

    async def _reconnect(self) -> str | None:
        """A new connection (None), or why the kernel counts as lost."""
        bound, delay, last = self._client.gateway.reconnect, _FIRST_DELAY, "no answer"
        with anyio.move_on_after(bound):
            while True:
                try:
                    if await self._client.state(self._kernel) is None:
                        return "the gateway no longer has it"
                    ws = await self._open()
                except GatewayError as exc:
                    last = exc.message
                else:
                    logger.info("the channels of kernel %s are connected again", self._kernel)
                    self._use(ws)
                    swapped, self._swapped = self._swapped, anyio.Event()
                    swapped.set()
                    return None
                await anyio.sleep(delay)  # the backoff between tries
                delay = min(delay * 2, _MAX_DELAY)
        return (
            f"the connection to the gateway dropped and was not restored within {bound:g} s: {last}"
        )

    async def _writer(self) -> None:
        async for text in self._outbox:
            while True:
                ws = self._ws
                try:
                    await ws.send(text)
                    break
                except ConnectionClosed:
                    while self._ws is ws:  # sent again on the next connection
                        await self._swapped.wait()

    def request(
        self, msg_type: str, content: dict[str, Any], metadata: dict[str, Any], msg_id: str = ""
    ) -> str:
        """Send a shell request (with ``msg_id``, if given); its ``msg_id``."""
        msg_id = msg_id or uuid.uuid4().hex
        self._post("shell", msg_type, content, metadata, msg_id)
        return msg_id

    def send_input(self, value: str) -> None:
        """Answer the kernel's ``input_request``."""
        self._post("stdin", "input_reply", {"value": value}, {}, uuid.uuid4().hex)

    def _post(self, channel: str, msg_type: str, content: Any, metadata: Any, msg_id: str) -> None:
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "session": self.session,
            "username": "lmc",
            "version": "5.3",
            "date": datetime.now(UTC).isoformat(),
        }
        msg = {"header": header, "parent_header": {}, "metadata": metadata, "content": content}
        try:
            self._send.send_nowait(json.dumps({**msg, "channel": channel, "buffers": []}))
        except (anyio.WouldBlock, anyio.ClosedResourceError):
            logger.warning("a %s for kernel %s was not sent", msg_type, self._kernel)

    def stop(self, reason: str) -> None:
        """End :meth:`run` with ``reason`` once the message being handed on is done."""
        self._stopped = self._stopped or reason

    async def aclose(self) -> None:
        self.stop("closed")
        self._send.close()
        ws = self._ws
        if ws is not None:
            with anyio.move_on_after(1.0, shield=True):
                await ws.close()
