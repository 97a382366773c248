"""The secrets broker against clients and upstreams that misbehave: every
connection it serves ends (bounded), nothing malformed or oversized is
forwarded, and an upstream it cannot reach is a 502, not a hang."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from lmc_runtime.egress.hooks import Dial
from lmc_runtime.egress.http1 import MAX_HEAD
from lmc_runtime.egress.secret_specs import parse_secret
from lmc_runtime.egress.secrets import SecretBroker, upstream_context

from .echo_upstream import Upstream, echo_upstream
from .test_secrets_broker import WAIT, client_context, exchange, get

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

VALUE = "sk-limits-00112233445566778899aabbccddeeff"
#: The broker's idle timeout in these tests: a silent peer is let go after it.
IDLE = 1.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[Upstream]:
    with echo_upstream("api.test", tmp_path) as server:
        yield server


def make_broker(upstream: Upstream) -> tuple[SecretBroker, str]:
    broker = SecretBroker(
        [parse_secret("API_KEY:api.test")],
        {"API_KEY": VALUE.encode()},
        upstream=upstream_context(upstream.ca_file),
        idle=IDLE,
    )
    return broker, broker.open("s1", ["API_KEY"])["API_KEY"]


@asynccontextmanager
async def served(
    broker: SecretBroker, dial: Dial
) -> AsyncIterator[tuple[int, asyncio.Queue[float]]]:
    """A loopback port the broker serves; the queue gets each connection's
    serving time once it has ended."""
    ended: asyncio.Queue[float] = asyncio.Queue()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        start = asyncio.get_running_loop().time()
        await broker.serve("s1", "api.test", 443, b"", (reader, writer), dial)
        ended.put_nowait(asyncio.get_running_loop().time() - start)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], ended
    finally:
        server.close()
        await server.wait_closed()


def dialer(upstream: Upstream) -> Dial:
    async def dial(name: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", upstream.port)

    return dial


async def ended_within(ended: asyncio.Queue[float]) -> float:
    """How long the next connection to end was served (bounded wait)."""
    return await asyncio.wait_for(ended.get(), WAIT)


async def test_every_connection_ends_when_its_client_does(upstream: Upstream) -> None:
    broker, token = make_broker(upstream)
    async with served(broker, dialer(upstream)) as (port, ended):
        requests = [get("/quiet", {"X-Api-Key": token})] * 3
        await asyncio.to_thread(
            exchange, port, requests, tls=client_context(broker), name="api.test"
        )
        await ended_within(ended)


async def test_a_silent_client_is_let_go(upstream: Upstream) -> None:
    broker, _ = make_broker(upstream)
    async with served(broker, dialer(upstream)) as (port, ended):
        with socket.create_connection(("127.0.0.1", port)) as silent:
            served_for = await ended_within(ended)
            silent.settimeout(WAIT)
            assert silent.recv(100) == b""  # closed by the broker
    assert served_for < IDLE + 5


async def test_a_long_response_to_a_silent_client_is_not_cut(upstream: Upstream) -> None:
    """3 s of response, a piece every 0.3 s, with the idle timeout at 1 s: the
    client says nothing meanwhile, the connection is not idle."""
    broker, token = make_broker(upstream)
    async with served(broker, dialer(upstream)) as (port, ended):
        answer = await asyncio.to_thread(
            exchange,
            port,
            [get("/slow", {"X-Api-Key": token})],
            tls=client_context(broker),
            name="api.test",
        )
        await ended_within(ended)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n\r\n" + b"x" * 10), answer


async def test_a_head_too_large_is_refused_not_forwarded(upstream: Upstream) -> None:
    broker, token = make_broker(upstream)
    huge = get("/echo", {"X-Api-Key": token, "X-Pad": "a" * MAX_HEAD})
    async with served(broker, dialer(upstream)) as (port, ended):
        answer = await asyncio.to_thread(
            exchange, port, [huge], tls=client_context(broker), name="api.test"
        )
        await ended_within(ended)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:100]
    assert upstream.seen.all() == b""


async def test_an_upstream_that_cannot_be_reached_is_a_502(upstream: Upstream) -> None:
    broker, token = make_broker(upstream)

    async def refused(name: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        raise ConnectionRefusedError(111, "Connection refused")

    async with served(broker, refused) as (port, ended):
        answer = await asyncio.to_thread(
            exchange,
            port,
            [get("/", {"X-Api-Key": token})],
            tls=client_context(broker),
            name="api.test",
        )
        await ended_within(ended)
    assert answer.startswith(b"HTTP/1.1 502") and b"cannot reach api.test" in answer


async def test_a_client_that_leaves_mid_handshake(upstream: Upstream) -> None:
    broker, _ = make_broker(upstream)
    async with served(broker, dialer(upstream)) as (port, ended):
        raw = socket.create_connection(("127.0.0.1", port))
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = client_context(broker).wrap_bio(incoming, outgoing, server_hostname="api.test")
        with pytest.raises(ssl.SSLWantReadError):
            tls.do_handshake()
        raw.sendall(outgoing.read())  # the ClientHello, then nothing
        raw.close()
        await ended_within(ended)
    assert upstream.seen.all() == b""
