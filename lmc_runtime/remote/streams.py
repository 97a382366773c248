"""The HTTP connections that execution streams use: kept-alive HTTP/1.1
connections, written and read directly.

An execution is one ``POST`` whose answer is NDJSON, a line per message. httpx
spent about a millisecond of CPU on each (building the request, its transport
layers, h11 in Python); this connection writes the request in one piece and
parses the chunked answer from what has arrived. The connection is an asyncio
protocol that gathers what arrives (:class:`_Reader`): a read takes what is
there without a turn of the event loop, and only a read that must wait arms
its timeout. (AnyIO's socket streams paused and resumed the socket's reading,
two system calls, and yielded to the loop once, for every read, and a timeout
scope for each piece cost as much again: 0.3 ms of CPU a run.) TLS uses
httpx's SSL context, so certificates are checked as for every other call of
the client.

A connection is kept for the next execution only when its answer was read to
its end; one that the server closed meanwhile is noticed before it is used.
Requests made at once each get a connection of their own (the server then
answers the second 409, busy, as it should), and one connection is kept idle.
"""

from __future__ import annotations

import asyncio
import select
import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio
import httpx

from ..errors import RemoteError

__all__ = ["Answer", "StreamConnection"]

_HEAD_MAX = 64 * 1024
#: Bytes gathered before the socket's reading is paused (until they are read).
_HIGH = 1 << 20
#: Seconds before the next of a name's addresses is tried beside the first (RFC 8305).
_EYEBALLS = 0.25


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError("the server sent nothing in time"))


class _Reader(asyncio.Protocol):
    """One connection: what arrived on it (``buffer``), read by the coroutines of
    one request at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        #: The server closed its end (or the connection was lost).
        self.ended = False
        self._lost: Exception | None = None
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > _HIGH and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self._lost = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        self._writable = self._loop.create_future()

    def resume_writing(self) -> None:
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self, future: asyncio.Future[None], timeout: float | None) -> None:
        timer = None if timeout is None else self._loop.call_later(timeout, _expire, future)
        try:
            await future
        finally:
            if timer is not None:
                timer.cancel()

    async def more(self, timeout: float | None) -> None:
        """Wait until more has arrived (at most ``timeout`` seconds: TimeoutError);
        the end of the stream raises :class:`anyio.IncompleteRead`, a lost
        connection its error."""
        if self.ended:
            if self._lost is not None:
                raise ConnectionError(f"the connection was lost: {self._lost}")
            raise anyio.IncompleteRead
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        self._waiter = self._loop.create_future()
        try:
            await self._wait(self._waiter, timeout)
        finally:
            self._waiter = None

    def _take(self, size: int, skip: int = 0) -> bytes:
        data = bytes(self.buffer[:size])
        del self.buffer[: size + skip]
        return data

    async def until(self, delimiter: bytes, limit: int, timeout: float | None) -> bytes:
        """What comes before ``delimiter`` (which is consumed too)."""
        start = 0
        while (found := self.buffer.find(delimiter, start)) < 0:
            if len(self.buffer) > limit:
                raise anyio.DelimiterNotFound(limit)
            start = max(0, len(self.buffer) - len(delimiter) + 1)
            await self.more(timeout)
        return self._take(found, len(delimiter))

    async def exactly(self, size: int, timeout: float | None) -> bytes:
        while len(self.buffer) < size:
            await self.more(timeout)
        return self._take(size)

    async def some(self, timeout: float | None) -> bytes | None:
        """What has arrived, waiting for some if nothing has; None at the end."""
        if not self.buffer:
            try:
                await self.more(timeout)
            except anyio.IncompleteRead:
                return None
        return self._take(len(self.buffer))

    async def write(self, data: bytes, timeout: float) -> None:
        assert self.transport is not None
        if self.ended or self.transport.is_closing():
            raise ConnectionError("the connection is closed")
        self.transport.write(data)
        if self._writable is not None:  # the kernel's buffer is full: wait for room
            await self._wait(self._writable, timeout)

    def close(self, *, abort: bool = False) -> None:
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()

    def reusable(self) -> bool:
        """Still open, and nothing arrived unasked: not even what the event loop
        has not handed over yet (the server's end of a connection it closed)."""
        transport = self.transport
        if self.ended or self.buffer or transport is None or transport.is_closing():
            return False
        # poll, not select: a client process may hold descriptors past 1024.
        poller = select.poll()
        try:
            poller.register(transport.get_extra_info("socket"), select.POLLIN)
            return not poller.poll(0)
        except (OSError, ValueError):
            return False


class Answer:
    """The status and headers of one response, and its body as it comes."""

    def __init__(self, head: bytes, reader: _Reader, timeout: float | None) -> None:
        status_line, _, fields = head.partition(b"\r\n")
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise RemoteError(f"the server answered no HTTP: {status_line[:80]!r}", code="protocol")
        self.status = int(parts[1])
        headers: dict[bytes, bytes] = {}
        for line in fields.split(b"\r\n"):
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        self.closes = headers.get(b"connection", b"").lower() == b"close"
        self._chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
        length = headers.get(b"content-length", b"")
        self._length = int(length) if length.isdigit() else None
        self._reader = reader
        self._timeout = timeout
        self.finished = False

    async def pieces(self) -> AsyncGenerator[bytes, None]:
        """The body's pieces: chunked, of a known length, or up to the end of the
        stream; each read waits at most the answer's timeout (TimeoutError)."""
        while (piece := await self._next()) is not None:
            yield piece
        self.finished = True

    async def read(self) -> bytes:
        """The whole body."""
        return b"".join([piece async for piece in self.pieces()])

    async def _next(self) -> bytes | None:
        reader, timeout = self._reader, self._timeout
        if self._chunked:
            size_line = await reader.until(b"\r\n", 1024, timeout)
            try:
                size = int(size_line.split(b";", 1)[0], 16)
            except ValueError:
                raise RemoteError(
                    f"a bad chunk size: {size_line[:40]!r}", code="protocol"
                ) from None
            if size == 0:
                while await reader.until(b"\r\n", _HEAD_MAX, timeout):
                    pass  # trailers
                return None
            return (await reader.exactly(size + 2, timeout))[:-2]
        if self._length is not None:
            length, self._length = self._length, 0
            return await reader.exactly(length, timeout) if length else None
        self.closes = True
        return await reader.some(timeout)


class StreamConnection:
    """POSTs to ``url``'s server whose answers are read as they come."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        *,
        connect_timeout: float,
        socket_options: list[tuple[int, int, int]],
    ) -> None:
        parts = urlsplit(url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        self._head = "".join(
            f"{k}: {v}\r\n" for k, v in {"Host": parts.netloc.rpartition("@")[2], **headers}.items()
        )
        self._connect_timeout = connect_timeout
        self._options = socket_options
        self._ssl: ssl.SSLContext | None = None
        #: A connection whose last answer was read to its end, ready for the next.
        self._idle: _Reader | None = None

    async def aclose(self) -> None:
        idle, self._idle = self._idle, None
        if idle is not None:
            idle.close()

    async def _take(self) -> _Reader:
        """The idle connection if the server kept it, else a new one."""
        idle, self._idle = self._idle, None
        if idle is not None:
            if idle.reusable():
                return idle
            idle.close()
        loop = asyncio.get_running_loop()
        tls = None
        if self._tls:
            tls = self._ssl = self._ssl or httpx.create_ssl_context()
        with anyio.fail_after(self._connect_timeout):
            _, reader = await loop.create_connection(
                lambda: _Reader(loop),
                self._host,
                self._port,
                ssl=tls,
                server_hostname=self._host if tls else None,
                happy_eyeballs_delay=_EYEBALLS,  # as AnyIO's connect_tcp
            )
        assert reader.transport is not None
        raw = reader.transport.get_extra_info("socket")
        for option in self._options:
            raw.setsockopt(*option)
        return reader

    @asynccontextmanager
    async def post(
        self, path: str, body: bytes, *, read_timeout: float | None, write_timeout: float
    ) -> AsyncIterator[Answer]:
        """The answer to a POST of ``body`` to ``path``, its body read as it comes.

        Transport failures raise OSError, TimeoutError or anyio's stream errors.
        The connection is kept only if the answer is read to its end.
        """
        reader = await self._take()
        request = (
            f"POST {self._prefix}{path} HTTP/1.1\r\n{self._head}Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        answer: Answer | None = None
        try:
            await reader.write(request + body, write_timeout)
            head = await reader.until(b"\r\n\r\n", _HEAD_MAX, read_timeout)
            answer = Answer(head, reader, read_timeout)
            yield answer
        finally:
            if answer is None or not answer.finished or answer.closes or self._idle is not None:
                reader.close(abort=answer is None or not answer.finished)
            else:
                self._idle = reader
