"""A kernel's client sockets: one reader per channel, each message handed on at once.

:class:`Channels` owns the jupyter-client client of one kernel and its stdin
link. One reader per channel (shell, IOPub, stdin) receives each message the
moment it is readable and hands it to ``dispatch``. Once the kernel has ended,
:meth:`Channels.drain` waits (bounded) until shell and IOPub saw their
connection close, which comes after everything the kernel sent, and returns
once the readers have handed all of it on. Nothing sleeps or polls.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import zmq

from .stdin import StdinLink

__all__ = ["Channels", "Dispatch"]

logger = logging.getLogger(__name__)

#: Receives each message: ``dispatch(channel, msg)``.
Dispatch = Callable[[str, dict[str, Any]], Awaitable[None]]

#: How long a drain waits for the kernel's connections to close (a child
#: process the kernel forked may hold them open).
_DRAIN_BOUND = 1.0
#: The channels whose messages a drain must see to the end.
_DRAINED = ("shell", "iopub")


class Channels:
    """The client of one kernel: its sockets, their readers, and sending."""

    def __init__(self, client: Any, connection_info: Mapping[str, Any], dispatch: Dispatch) -> None:
        self._client = client
        client.start_channels(hb=False, stdin=False)
        self._stdin = StdinLink(client, connection_info)
        self._sockets = {
            "shell": client.shell_channel.socket,
            "iopub": client.iopub_channel.socket,
            "stdin": self._stdin.socket,
        }
        self._monitors = [
            self._sockets[name].get_monitor_socket(zmq.EVENT_DISCONNECTED) for name in _DRAINED
        ]
        self._dispatch = dispatch
        self._waits: dict[str, anyio.CancelScope] = {}
        self._draining = False
        self._reading = len(_DRAINED)
        self._drained = anyio.Event()

    async def read(self) -> None:
        """Run the readers (and the stdin link's monitor) until closed or drained."""
        async with anyio.create_task_group() as tg:
            for channel, socket in self._sockets.items():
                tg.start_soon(self._reader, channel, socket)
            tg.start_soon(self._stdin.watch)

    async def _reader(self, channel: str, socket: Any) -> None:
        session = self._client.session
        try:
            while (frames := await self._receive(channel, socket)) is not None:
                try:
                    msg = session.deserialize(session.feed_identities(frames)[1])
                except Exception:
                    logger.warning("dropped an unreadable %s message", channel, exc_info=True)
                    continue
                await self._dispatch(channel, msg)
        except zmq.ZMQError:
            logger.debug("the %s socket closed", channel)
        finally:
            if channel in _DRAINED:
                self._reading -= 1
                if not self._reading:
                    self._drained.set()

    async def _receive(self, channel: str, socket: Any) -> list[bytes] | None:
        """The next message; once draining, only one already there (None when none is)."""
        if not self._draining:
            with anyio.CancelScope() as self._waits[channel]:
                frames: list[bytes] = await socket.recv_multipart()
                return frames
        try:
            frames = await socket.recv_multipart(flags=zmq.NOBLOCK)
        except zmq.Again:
            return None
        return frames

    async def drain(self) -> None:
        """After the kernel ended: hand on everything it sent, then stop reading."""
        with anyio.move_on_after(_DRAIN_BOUND):
            for monitor in self._monitors:
                await monitor.recv_multipart()
        self._draining = True
        for scope in self._waits.values():
            scope.cancel()
        await self._drained.wait()

    def request(
        self, msg_type: str, content: dict[str, Any], metadata: dict[str, Any], msg_id: str = ""
    ) -> str:
        """Send a shell request (with ``msg_id``, if given); its ``msg_id``."""
        session = self._client.session
        header = session.msg_header(msg_type)
        if msg_id:
            header["msg_id"] = msg_id
        msg = session.msg(msg_type, content, header=header, metadata=metadata)
        self._client.shell_channel.send(msg)
        return str(header["msg_id"])

    def send_input(self, value: str) -> None:
        """Answer the kernel's ``input_request``."""
        self._stdin.send_input(value)

    async def stdin_connected(self) -> None:
        await self._stdin.wait_connected()

    def close(self) -> None:
        """Close every socket (the readers end with an error they expect)."""
        for name, monitor in zip(_DRAINED, self._monitors, strict=True):
            with contextlib.suppress(zmq.ZMQError):
                self._sockets[name].disable_monitor()
            monitor.close(linger=0)
        self._client.stop_channels()
        self._stdin.close()
