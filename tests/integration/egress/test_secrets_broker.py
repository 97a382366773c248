"""The secrets broker over real sockets: a client that trusts the server's CA
talks TLS to the broker on loopback (as a sandbox's connection reaches it
through the gateway); the broker dials a real HTTPS server with a CA of its own,
which echoes what it received."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.egress.secret_specs import parse_secret
from lmc_runtime.egress.secrets import SecretBroker, upstream_context

from .echo_upstream import Upstream, echo_upstream

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

API_KEY = "sk-live-4f1c2e9a7b3d5f60aa11bb22cc33dd44"
OTHER_KEY = "ghp_only-for-other-host-0123456789abcdef"
#: Bounds every wait of a client on the broker.
WAIT = 20.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[Upstream]:
    with echo_upstream("api.test", tmp_path) as server:
        yield server


def make_broker(ca_file: Path | None) -> SecretBroker:
    specs = [parse_secret("API_KEY:api.test"), parse_secret("OTHER_KEY:other.test")]
    values = {"API_KEY": API_KEY.encode(), "OTHER_KEY": OTHER_KEY.encode()}
    return SecretBroker(specs, values, upstream=upstream_context(ca_file), idle=WAIT)


@asynccontextmanager
async def broker_at(
    broker: SecretBroker, session: str, name: str, port: int, upstream_port: int
) -> AsyncIterator[int]:
    """A loopback port whose connections the broker serves as ``session``'s to
    ``name:port``, as the gateway hands them over: the first bytes already read."""

    async def dial(host: str, to: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        assert (host, to) == (name, port)
        return await asyncio.open_connection("127.0.0.1", upstream_port)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.read(5)
        await broker.serve(session, name, port, head, (reader, writer), dial)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def client_context(broker: SecretBroker) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=broker.ca.pem.decode())
    return context


def exchange(port: int, requests: list[bytes], *, tls: ssl.SSLContext | None, name: str) -> bytes:
    """Send ``requests`` on one connection (keep-alive), read until the server
    closes or has answered each; every byte received."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock = tls.wrap_socket(raw, server_hostname=name) if tls else raw
    with sock:
        received = b""
        for request in requests:
            sock.sendall(request)
            received += read_response(sock)
        return received


def read_response(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece:
            return data
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        piece = sock.recv(65536)
        if not piece:
            break
        body += piece
    return head + b"\r\n\r\n" + body


def echoed(response: bytes) -> dict[str, Any]:
    return dict(json.loads(response.partition(b"\r\n\r\n")[2]))


def get(path: str, headers: dict[str, str], host: str = "api.test") -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def test_the_upstream_sees_the_value_in_headers_only(upstream: Upstream) -> None:
    broker = make_broker(upstream.ca_file)
    token = broker.open("s1", ["API_KEY"])["API_KEY"]
    assert API_KEY not in token
    body = f"key={token}".encode()
    post = (
        f"POST /echo?key={token} HTTP/1.1\r\nHost: api.test\r\n"
        f"Authorization: Bearer {token}\r\nX-Api-Key: {token}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    chunked = (
        f"PUT /chunks HTTP/1.1\r\nHost: api.test\r\nX-Api-Key: {token}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
        f"{len(token):x}\r\n{token}\r\n0\r\n\r\n"
    ).encode()
    async with broker_at(broker, "s1", "api.test", 443, upstream.port) as port:
        received = await asyncio.to_thread(
            exchange, port, [post, chunked], tls=client_context(broker), name="api.test"
        )
    first, second = received.split(b"HTTP/1.1 200")[1:]
    answer = echoed(b"HTTP/1.1 200" + first)
    assert answer["headers"]["Authorization"] == f"Bearer {API_KEY}"
    assert answer["headers"]["X-Api-Key"] == API_KEY
    assert answer["path"] == f"/echo?key={token}"  # the request line is not touched
    assert answer["body"] == f"key={token}"  # nor the body
    again = echoed(b"HTTP/1.1 200" + second)  # the next request on the same connection
    assert again["headers"]["X-Api-Key"] == API_KEY
    assert again["body"] == token
    assert upstream.seen.all().count(API_KEY.encode()) == 3


async def test_nothing_but_the_upstreams_echo_carries_the_value(upstream: Upstream) -> None:
    broker = make_broker(upstream.ca_file)
    token = broker.open("s1", ["API_KEY"])["API_KEY"]
    async with broker_at(broker, "s1", "api.test", 443, upstream.port) as port:
        received = await asyncio.to_thread(
            exchange,
            port,
            [get("/quiet", {"Authorization": f"Bearer {token}"})],
            tls=client_context(broker),
            name="api.test",
        )
    assert received.startswith(b"HTTP/1.1 200") and b"nothing to see" in received
    assert API_KEY.encode() not in received
    assert API_KEY.encode() in upstream.seen.all()


async def test_only_the_sessions_own_placeholders_for_this_host(upstream: Upstream) -> None:
    broker = make_broker(upstream.ca_file)
    mine = broker.open("s1", ["API_KEY", "OTHER_KEY"])
    theirs = broker.open("s2", ["API_KEY"])["API_KEY"]
    headers = {
        "X-Mine": mine["API_KEY"],
        "X-Theirs": theirs,  # another session's placeholder
        "X-Other": mine["OTHER_KEY"],  # a secret that goes to other.test only
    }
    async with broker_at(broker, "s1", "api.test", 443, upstream.port) as port:
        received = await asyncio.to_thread(
            exchange, port, [get("/echo", headers)], tls=client_context(broker), name="api.test"
        )
    seen = echoed(received)["headers"]
    assert seen["X-Mine"] == API_KEY
    assert seen["X-Theirs"] == theirs
    assert seen["X-Other"] == mine["OTHER_KEY"]
    assert OTHER_KEY.encode() not in upstream.seen.all()
    assert not broker.wants("s2", "other.test", 443)
    assert broker.wants("s1", "other.test", 443) and broker.wants("s1", "api.test", 80)
    assert not broker.wants("s1", "api.test", 8443)
    broker.close("s1")
    assert not broker.wants("s1", "api.test", 443)


async def test_an_upstream_the_broker_does_not_trust_gets_nothing(upstream: Upstream) -> None:
    broker = make_broker(None)  # the system's CAs only: not the upstream's own
    token = broker.open("s1", ["API_KEY"])["API_KEY"]
    async with broker_at(broker, "s1", "api.test", 443, upstream.port) as port:
        received = await asyncio.to_thread(
            exchange,
            port,
            [get("/echo", {"X-Api-Key": token})],
            tls=client_context(broker),
            name="api.test",
        )
    assert received.startswith(b"HTTP/1.1 502")
    assert b"certificate" in received
    assert upstream.seen.all() == b""


async def test_plain_http_to_a_listed_host(tmp_path: Path) -> None:
    broker = make_broker(None)
    token = broker.open("s1", ["API_KEY"])["API_KEY"]
    with echo_upstream("api.test", tmp_path, tls=False) as server:
        async with broker_at(broker, "s1", "api.test", 80, server.port) as port:
            received = await asyncio.to_thread(
                exchange, port, [get("/echo", {"X-Api-Key": token})], tls=None, name="api.test"
            )
    assert echoed(received)["headers"]["X-Api-Key"] == API_KEY


async def test_an_ambiguous_request_is_refused_not_forwarded(upstream: Upstream) -> None:
    broker = make_broker(upstream.ca_file)
    token = broker.open("s1", ["API_KEY"])["API_KEY"]
    smuggled = (
        f"POST /echo HTTP/1.1\r\nHost: api.test\r\nX-Api-Key: {token}\r\n"
        "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    ).encode()
    async with broker_at(broker, "s1", "api.test", 443, upstream.port) as port:
        received = await asyncio.to_thread(
            exchange, port, [smuggled], tls=client_context(broker), name="api.test"
        )
    assert received.startswith(b"HTTP/1.1 400")
    assert upstream.seen.all() == b""


async def test_a_client_that_does_not_trust_the_ca_gets_nothing_sent(upstream: Upstream) -> None:
    broker = make_broker(upstream.ca_file)
    broker.open("s1", ["API_KEY"])
    async with broker_at(broker, "s1", "api.test", 443, upstream.port) as port:
        with pytest.raises(ssl.SSLCertVerificationError):
            await asyncio.to_thread(
                exchange,
                port,
                [get("/echo", {})],
                tls=ssl.create_default_context(),
                name="api.test",
            )
    assert upstream.seen.all() == b""
