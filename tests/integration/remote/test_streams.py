"""The connection execution streams use, against a scripted HTTP server: chunked
answers, a kept-alive connection, and what replaces or ends it."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.abc import ByteStream, Listener
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.tls import TLSListener

from lmc_runtime.egress.ca import EgressCA
from lmc_runtime.remote import streams
from lmc_runtime.remote.streams import StreamConnection

#: A bound on every wait, only to catch a hang.
GUARD = 30.0

Script = Callable[[ByteStream, bytes], Awaitable[bool]]


def chunked(*pieces: bytes) -> bytes:
    """A 200 answer whose body is ``pieces``, one chunk each."""
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)
    return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + body + b"0\r\n\r\n"


class Scripted:
    """A server that answers each request with ``script`` (which says whether to
    keep the connection) and counts connections and requests."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[bytes] = []
        self.closed = anyio.Event()

    async def handle(self, stream: ByteStream) -> None:
        self.connections += 1
        reader = BufferedByteReceiveStream(stream)
        try:
            while True:
                head = await reader.receive_until(b"\r\n\r\n", 65536)
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                body = await reader.receive_exactly(length)
                self.requests.append(head + b"\r\n\r\n" + body)
                if not await self.script(stream, body):
                    break
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
            pass
        finally:
            await stream.aclose()
            self.closed.set()
            self.closed = anyio.Event()


@asynccontextmanager
async def serving(
    script: Script, tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[Scripted, StreamConnection]]:
    """A scripted server (over TLS with ``tls``, its server context) and a
    connection to it."""
    server = Scripted(script)
    plain = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = plain.extra(anyio.abc.SocketAttribute.local_port)
    listener: Listener[Any] = plain if tls is None else TLSListener(plain, tls)
    scheme = "http" if tls is None else "https"
    connection = StreamConnection(
        f"{scheme}://127.0.0.1:{port}/prefix",
        {"Authorization": "Bearer t"},
        connect_timeout=GUARD,
        socket_options=[],
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.handle)
        try:
            with anyio.fail_after(GUARD):
                yield server, connection
        finally:
            await connection.aclose()
            tg.cancel_scope.cancel()


async def post(connection: StreamConnection, body: bytes) -> tuple[int, bytes]:
    async with connection.post("/run", body, read_timeout=GUARD, write_timeout=GUARD) as answer:
        return answer.status, await answer.read()


def test_chunked_answers_are_read_whole_on_one_kept_connection() -> None:
    async def answer(stream: ByteStream, body: bytes) -> bool:
        await stream.send(chunked(b'{"a":', b"1}\n{", b'"b":2}\n'))
        return True

    async def scenario() -> None:
        async with serving(answer) as (server, connection):
            for _ in range(3):
                assert await post(connection, b'{"x":1}') == (200, b'{"a":1}\n{"b":2}\n')
            assert server.connections == 1
            first = server.requests[0]
            assert first.startswith(b"POST /prefix/run HTTP/1.1\r\n")
            assert b"\r\nAuthorization: Bearer t\r\n" in first
            assert first.endswith(b'\r\n\r\n{"x":1}')

    anyio.run(scenario)


def test_a_connection_the_server_closed_is_replaced() -> None:
    """Guards: a kept-alive connection the server closed while idle (its
    keep-alive timeout) must not fail the next execution."""

    async def answer_once(stream: ByteStream, body: bytes) -> bool:
        await stream.send(chunked(b"done\n"))
        return False

    async def scenario() -> None:
        async with serving(answer_once) as (server, connection):
            closed = server.closed
            assert await post(connection, b"1") == (200, b"done\n")
            await closed.wait()
            assert await post(connection, b"2") == (200, b"done\n")
            assert server.connections == 2

    anyio.run(scenario)


def test_an_answer_left_unread_closes_its_connection() -> None:
    """A caller that stops reading leaves no half-read answer on a kept connection:
    the server sees the connection end (which stops the code it runs)."""

    async def endless(stream: ByteStream, body: bytes) -> bool:
        await stream.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nline\r\n")
        return True

    async def scenario() -> None:
        async with serving(endless) as (server, connection):
            closed = server.closed
            async with connection.post("/run", b"1", read_timeout=GUARD, write_timeout=GUARD) as a:
                async for piece in a.pieces():
                    assert piece == b"line"
                    break
            await closed.wait()
            assert server.connections == 1

    anyio.run(scenario)


def test_an_error_answer_with_a_length_is_read_and_the_connection_kept() -> None:
    async def refuse(stream: ByteStream, body: bytes) -> bool:
        error = b'{"error":{"code":"malformed","message":"no"}}'
        head = b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\n\r\n" % len(error)
        await stream.send(head + error)
        return True

    async def scenario() -> None:
        async with serving(refuse) as (server, connection):
            for _ in range(2):
                status, body = await post(connection, b"1")
                assert status == 400 and b'"malformed"' in body
            assert server.connections == 1

    anyio.run(scenario)


def test_a_body_cut_short_is_an_error() -> None:
    async def cut(stream: ByteStream, body: bytes) -> bool:
        await stream.send(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n64\r\nonly this")
        return False

    async def scenario() -> None:
        async with serving(cut) as (_, connection):
            with pytest.raises((anyio.IncompleteRead, anyio.EndOfStream)):
                await post(connection, b"1")

    anyio.run(scenario)


def test_an_https_answer_is_read_over_tls_with_the_certificate_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over TLS, the server's certificate is checked as httpx checks it: a server
    whose certificate the client's CAs do not vouch for is refused; one they do
    answers, on one kept connection."""
    authority = EgressCA("a test CA")
    tls = authority.server_context("127.0.0.1")

    async def answer(stream: ByteStream, body: bytes) -> bool:
        await stream.send(chunked(b"over ", b"tls\n"))
        return True

    async def refused() -> None:
        async with serving(answer, tls) as (_, connection):
            with pytest.raises(ssl.SSLCertVerificationError):
                await post(connection, b"1")

    async def trusted() -> None:
        async with serving(answer, tls) as (server, connection):
            for _ in range(2):
                assert await post(connection, b"1") == (200, b"over tls\n")
            assert server.connections == 1

    anyio.run(refused)
    monkeypatch.setattr(
        streams.httpx,
        "create_ssl_context",
        lambda: ssl.create_default_context(cadata=authority.pem.decode()),
    )
    anyio.run(trusted)
