"""A kernel's client sockets: one reader per channel hands each message on at once.

stdin is a DEALER of our own with a monitor attached before it connects: the
kernel's ROUTER drops a message to a peer still in its handshake, so readiness
waits until stdin is really connected. Once the kernel ended, :meth:`Channels.drain`
waits (bounded) for shell and IOPub to see their connection close, which comes
after everything the kernel sent, and returns once all of it was handed on.

A message's content is parsed only if ``needed`` says its header asks for it
(a display sent after its run ended is dropped unread), and a reader lets the
other tasks run after every large message and every few small ones: a kernel
that floods its channels never stalls the event loop that serves every session.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import zmq
from zmq.utils.monitor import parse_monitor_message

from .wire import deserialize

__all__ = ["Channels", "Dispatch", "Needed"]

logger = logging.getLogger(__name__)

#: Receives each message: ``dispatch(channel, msg)``.
Dispatch = Callable[[str, dict[str, Any]], Awaitable[None]]
#: Whether a message (its header and parent, content not parsed yet) is wanted.
Needed = Callable[[str, dict[str, Any]], bool]
#: A reader lets other tasks run after this many messages, or one this large (bytes).
_BURST, _LARGE = 16, 64 * 1024

#: How long a drain waits for the connections to close (a child may hold them).
_DRAIN_BOUND = 1.0
_DRAINED = ("shell", "iopub")
_CONNECTED = getattr(zmq, "EVENT_HANDSHAKE_SUCCEEDED", zmq.EVENT_CONNECTED)


class Channels:
    """The client of one kernel: its sockets, their readers, and sending."""

    def __init__(
        self,
        client: Any,
        info: Mapping[str, Any],
        dispatch: Dispatch,
        needed: Needed = lambda channel, msg: True,
        *,
        iopub_mark: int = 0,
    ) -> None:
        self._client, self._dispatch, self._needed = client, dispatch, needed
        # IOPub is PUB/SUB, which drops what passes the HWM of both ends (1,000
        # each by default) without a word. Regression: a reader that fell behind
        # on a busy machine lost 492 of 10,000 displays. So IOPub has no receive
        # mark here (0), unless the kernel's IOPub has no send mark: then what a
        # reader that waits (see :class:`~..core.route.Route`) has not read yet
        # waits in the kernel, past ``iopub_mark`` messages here, and nothing is
        # dropped. Regression: with no mark at either end, a flood the caller did
        # not read grew the host by 32 MiB a second.
        context = client.context
        context.setsockopt(zmq.RCVHWM, iopub_mark)
        try:
            client.iopub_channel  # noqa: B018 (made now, with that mark)
            context.setsockopt(zmq.RCVHWM, 0)
            client.start_channels(hb=False, stdin=False)
        finally:
            context.sockopts.pop(zmq.RCVHWM, None)
        stdin = client.context.socket(zmq.DEALER)
        stdin.linger, stdin.identity = 0, client.session.bsession
        self._sockets = {
            "shell": client.shell_channel.socket,
            "iopub": client.iopub_channel.socket,
            "stdin": stdin,
        }
        self._monitors = {
            "stdin": stdin.get_monitor_socket(_CONNECTED | zmq.EVENT_DISCONNECTED),
            **{n: self._sockets[n].get_monitor_socket(zmq.EVENT_DISCONNECTED) for n in _DRAINED},
        }
        stdin.connect(f"ipc://{info['ip']}-{info['stdin_port']}")
        self._stdin_up = anyio.Event()
        self._waits: dict[str, anyio.CancelScope] = {}
        self._draining = False
        self._reading = len(_DRAINED)
        self._drained = anyio.Event()

    async def read(self) -> None:
        """Run the readers (and stdin's monitor) until closed or drained."""
        async with anyio.create_task_group() as tg:
            for channel, socket in self._sockets.items():
                tg.start_soon(self._reader, channel, socket)
            tg.start_soon(self._watch_stdin)

    async def _reader(self, channel: str, socket: Any) -> None:
        session = self._client.session
        count = 0
        try:
            while (frames := await self._receive(channel, socket)) is not None:
                count += 1
                if count % _BURST == 0 or sum(map(len, frames)) > _LARGE:
                    await anyio.lowlevel.checkpoint()
                try:
                    msg = deserialize(session, frames, content=False)
                    if not self._needed(channel, msg):
                        continue
                    msg["content"] = session.unpack(msg["content"])
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
            try:  # what is there already needs no cancel scope (six a print(1))
                frames: list[bytes] = await socket.recv_multipart(flags=zmq.NOBLOCK)
                return frames
            except zmq.Again:
                pass
            with anyio.CancelScope() as self._waits[channel]:
                frames = await socket.recv_multipart()
                return frames
        try:
            frames = await socket.recv_multipart(flags=zmq.NOBLOCK)
        except zmq.Again:
            return None
        return frames

    async def _watch_stdin(self) -> None:
        while True:
            try:
                frames = await self._monitors["stdin"].recv_multipart()
            except zmq.ZMQError:
                return
            event = parse_monitor_message(frames)["event"]
            if event == _CONNECTED:
                self._stdin_up.set()
            elif event == zmq.EVENT_DISCONNECTED and self._stdin_up.is_set():
                self._stdin_up = anyio.Event()

    def nudge(self) -> None:
        """Make shell and IOPub look again for messages they hold.

        Their readiness is edge-triggered: reading ``EVENTS`` makes the async
        socket schedule a wake-up for a message it holds but was not woken for.
        """
        for name in _DRAINED:
            with contextlib.suppress(zmq.ZMQError):
                self._sockets[name].get(zmq.EVENTS)

    def holding(self) -> list[str]:
        """The channels with a message waiting unread (for a stalled start's error)."""
        held = []
        for name in _DRAINED:
            with contextlib.suppress(zmq.ZMQError):
                if self._sockets[name].get(zmq.EVENTS) & zmq.POLLIN:
                    held.append(name)
        return held

    async def stdin_connected(self) -> None:
        await self._stdin_up.wait()

    async def drain(self) -> None:
        """After the kernel ended: hand on everything it sent, then stop reading."""
        with anyio.move_on_after(_DRAIN_BOUND):
            for name in _DRAINED:
                await self._monitors[name].recv_multipart()
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
        header["msg_id"] = msg_id or header["msg_id"]
        session_msg = session.msg(msg_type, content, header=header, metadata=metadata)
        self._client.shell_channel.send(session_msg)
        return str(header["msg_id"])

    def send_input(self, value: str) -> None:
        """Answer the kernel's ``input_request``."""
        self._client.session.send(self._sockets["stdin"], "input_reply", {"value": value})

    def close(self) -> None:
        """Close every socket (the readers end with an error they expect)."""
        for name, monitor in self._monitors.items():
            with contextlib.suppress(zmq.ZMQError):
                self._sockets[name].disable_monitor()
            monitor.close(linger=0)
        self._client.stop_channels()
        self._sockets["stdin"].close(linger=0)
