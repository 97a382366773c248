"""The HTTP connections that execution streams use: kept-alive HTTP/1.1
connections, written and read directly.

An execution is one ``POST`` whose answer is NDJSON, a line per message. httpx
spent about a millisecond of CPU on each (building the request, its transport
layers, h11 in Python); this connection writes the request in one piece and
reads the chunked answer with a buffered reader. TLS uses httpx's SSL context,
so certificates are checked as for every other call of the client.

A connection is kept for the next execution only when its answer was read to
its end; one that the server closed meanwhile is noticed before it is used.
Requests made at once each get a connection of their own (the server then
answers the second 409, busy, as it should), and one connection is kept idle.
"""

from __future__ import annotations

import select
import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio
import httpx
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.tls import TLSStream

from ..errors import RemoteError

__all__ = ["Answer", "StreamConnection"]

_HEAD_MAX = 64 * 1024

_Connection = tuple[SocketStream | TLSStream, BufferedByteReceiveStream]


class Answer:
    """The status and headers of one response, and its body as it comes."""

    def __init__(
        self, head: bytes, reader: BufferedByteReceiveStream, timeout: float | None
    ) -> None:
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
        """The body's pieces: chunked, of a known length, or up to the end of the stream."""
        while True:
            with anyio.fail_after(self._timeout):
                piece = await self._next()
            if piece is None:
                self.finished = True
                return
            yield piece

    async def read(self) -> bytes:
        """The whole body."""
        return b"".join([piece async for piece in self.pieces()])

    async def _next(self) -> bytes | None:
        reader = self._reader
        if self._chunked:
            size_line = await reader.receive_until(b"\r\n", 1024)
            try:
                size = int(size_line.split(b";", 1)[0], 16)
            except ValueError:
                raise RemoteError(
                    f"a bad chunk size: {size_line[:40]!r}", code="protocol"
                ) from None
            if size == 0:
                while await reader.receive_until(b"\r\n", _HEAD_MAX):
                    pass  # trailers
                return None
            return (await reader.receive_exactly(size + 2))[:-2]
        if self._length is not None:
            length, self._length = self._length, 0
            return await reader.receive_exactly(length) if length else None
        self.closes = True
        try:
            return await reader.receive()
        except anyio.EndOfStream:
            return None


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
        self._idle: _Connection | None = None

    async def aclose(self) -> None:
        idle, self._idle = self._idle, None
        if idle is not None:
            await _close(idle[0])

    async def _take(self) -> _Connection:
        """The idle connection if the server kept it, else a new one."""
        idle, self._idle = self._idle, None
        if idle is not None:
            if not _closed_by_peer(idle[0]) and not idle[1].buffer:
                return idle
            await _close(idle[0])
        stream: SocketStream | TLSStream
        with anyio.fail_after(self._connect_timeout):
            if self._tls:
                self._ssl = self._ssl or httpx.create_ssl_context()
                stream = await anyio.connect_tcp(self._host, self._port, ssl_context=self._ssl)
            else:
                stream = await anyio.connect_tcp(self._host, self._port)
        raw = stream.extra(SocketAttribute.raw_socket)
        for option in self._options:
            raw.setsockopt(*option)
        return stream, BufferedByteReceiveStream(stream)

    @asynccontextmanager
    async def post(
        self, path: str, body: bytes, *, read_timeout: float | None, write_timeout: float
    ) -> AsyncIterator[Answer]:
        """The answer to a POST of ``body`` to ``path``, its body read as it comes.

        Transport failures raise OSError, TimeoutError or anyio's stream errors.
        The connection is kept only if the answer is read to its end.
        """
        connection = await self._take()
        stream, reader = connection
        request = (
            f"POST {self._prefix}{path} HTTP/1.1\r\n{self._head}Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        answer: Answer | None = None
        try:
            with anyio.fail_after(write_timeout):
                await stream.send(request + body)
            with anyio.fail_after(read_timeout):
                head = await reader.receive_until(b"\r\n\r\n", _HEAD_MAX)
            answer = Answer(head, reader, read_timeout)
            yield answer
        finally:
            if answer is None or not answer.finished or answer.closes or self._idle is not None:
                await _close(stream)
            else:
                self._idle = connection


async def _close(stream: SocketStream | TLSStream) -> None:
    with anyio.CancelScope(shield=True):
        await stream.aclose()


def _closed_by_peer(stream: SocketStream | TLSStream) -> bool:
    """Whether an idle kept-alive connection has been closed (or sent something unasked)."""
    sock = stream.extra(SocketAttribute.raw_socket)
    # poll, not select: a client process may hold descriptors past 1024.
    poller = select.poll()
    try:
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
