"""A TCP proxy on a free loopback port in front of a gateway, which a test can
cut (every connection through it dropped at once), have lose a message of the
channels in flight (a frame holding some text never forwarded, and the
connections cut), and close (no longer listening, so connections are
refused) and open again on the same port.

It runs on an event loop of its own thread (an AnyIO blocking portal), so the
test's thread drives it while a Computer runs code through it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskStatus
from anyio.from_thread import BlockingPortal, start_blocking_portal

__all__ = ["Proxy", "proxy_to"]

_CHUNK = 65536
#: How long a test waits for something the proxy observes.
_WAIT_BOUND = 30.0
#: What a side that went away raises.
_GONE = (OSError, anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)


class Proxy:
    """Forwards connections to ``127.0.0.1:target``; counts the channels WebSockets."""

    def __init__(self, portal: BlockingPortal, target: int) -> None:
        self._portal, self._target = portal, target
        self.port = 0
        self._connections: set[anyio.CancelScope] = set()
        self._listening: anyio.CancelScope | None = None
        self._channels = 0
        self._changed = anyio.Event()
        self._lose: bytes | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def channels(self) -> int:
        """How many channels WebSockets were opened through it so far."""
        return self._channels

    def open(self) -> None:
        """Listen (on the same port as before, if it listened before)."""
        self._portal.start_task(self._serve)

    def close(self) -> None:
        """Stop listening (connections are refused) and cut the open ones."""
        self._portal.call(self._close)

    def cut(self) -> None:
        """Drop every connection through it; it keeps listening."""
        self._portal.call(self._cut)

    def lose(self, text: bytes) -> None:
        """Swallow the next channels frame from the gateway holding ``text``, then cut."""
        self._lose = text

    def wait_channels(self, count: int) -> None:
        """Return once ``count`` channels WebSockets were opened (bounded)."""
        self._portal.call(self._wait_channels, count)

    async def _serve(self, *, task_status: TaskStatus[None]) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        self.port = listener.extra(SocketAttribute.local_port)
        with anyio.CancelScope() as self._listening:
            task_status.started()
            async with listener:
                await listener.serve(self._handle)

    async def _close(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
        await self._cut()

    async def _cut(self) -> None:
        for scope in list(self._connections):
            scope.cancel()

    async def _wait_channels(self, count: int) -> None:
        with anyio.fail_after(_WAIT_BOUND):
            while self._channels < count:
                await self._changed.wait()

    async def _handle(self, client: SocketStream) -> None:
        with anyio.CancelScope() as scope:
            self._connections.add(scope)
            try:
                async with client, await anyio.connect_tcp("127.0.0.1", self._target) as server:
                    first = await client.receive(_CHUNK)
                    await server.send(first)
                    channels = b"/channels" in first.split(b"\r\n", 1)[0]
                    if channels:
                        self._channels += 1
                        self._changed.set()
                        self._changed = anyio.Event()
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_ends_both, tg.cancel_scope, self._pipe, client, server)
                        answers = self._frames if channels else self._pipe
                        tg.start_soon(_ends_both, tg.cancel_scope, answers, server, client)
            except _GONE:
                pass  # the gateway is down, or the client left at once
            finally:
                self._connections.discard(scope)

    async def _pipe(self, source: SocketStream, sink: SocketStream) -> None:
        try:
            while True:
                await sink.send(await source.receive(_CHUNK))
        except anyio.EndOfStream:
            await sink.send_eof()

    async def _frames(self, source: SocketStream, sink: SocketStream) -> None:
        """Forward the gateway's handshake answer, then its frames one by one."""
        buffer = bytearray()
        while b"\r\n\r\n" not in buffer:
            buffer += await source.receive(_CHUNK)
        end = buffer.index(b"\r\n\r\n") + 4
        await sink.send(bytes(buffer[:end]))
        del buffer[:end]
        while True:
            for frame in _complete_frames(buffer):
                if self._lose is not None and self._lose in frame:
                    self._lose = None
                    await self._cut()
                    return
                await sink.send(frame)
            buffer += await source.receive(_CHUNK)


async def _ends_both(
    scope: anyio.CancelScope,
    forward: Callable[[SocketStream, SocketStream], Awaitable[None]],
    source: SocketStream,
    sink: SocketStream,
) -> None:
    """Forward from ``source`` to ``sink``; if one side fails, end the connection."""
    try:
        await forward(source, sink)
    except _GONE:
        scope.cancel()


def _complete_frames(buffer: bytearray) -> Iterator[bytes]:
    """Take the complete WebSocket frames off the front of ``buffer``."""
    while len(buffer) >= 2:
        size, head = buffer[1] & 0x7F, 2
        if size == 126:
            size, head = int.from_bytes(buffer[2:4]), 4
        elif size == 127:
            size, head = int.from_bytes(buffer[2:10]), 10
        total = head + (4 if buffer[1] & 0x80 else 0) + size
        if len(buffer) < max(total, head):
            return
        frame = bytes(buffer[:total])
        del buffer[:total]
        yield frame


@contextmanager
def proxy_to(target: int) -> Iterator[Proxy]:
    """A listening proxy to ``target`` for the block; closed at its end."""
    with start_blocking_portal() as portal:
        proxy = Proxy(portal, target)
        proxy.open()
        try:
            yield proxy
        finally:
            proxy.close()
