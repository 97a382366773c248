"""Attacks on the egress gateway and the secrets broker that the policy tests
do not cover, over real sockets on this host (fast: no sandbox, no server).

* **A downgrade of a secret's TLS.** The broker decided TLS or plain HTTP by
  the client's first byte, whatever the port: plain HTTP to a secret's host on
  443 (or its own port) went out in the clear with the value in it, to a port
  where only TLS was meant. Only port 80 relays plain HTTP with values.
* **Connections of many namespaces.** Each process of a session has a
  namespace and a gateway key of its own (``<session>/<n>``); the cap on open
  connections was per key, so a session with many processes held many times
  the documented cap, and the gateway had no cap across sessions at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from lmc_runtime.egress.gateway import EgressGateway, GatewayLimits
from lmc_runtime.egress.hooks import SessionSockets
from lmc_runtime.egress.secret_specs import parse_secret
from lmc_runtime.egress.secrets import SecretBroker, upstream_context
from tests.integration.egress.echo_upstream import Upstream, echo_upstream
from tests.integration.egress.harness import WAIT, StaticResolver, policy, session_sockets
from tests.integration.egress.test_secrets_broker import (
    API_KEY,
    broker_at,
    client_context,
    echoed,
    exchange,
    get,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[Upstream]:
    """The secret's host over TLS, answering with what it received."""
    with echo_upstream("api.test", tmp_path) as server:
        yield server


@pytest.fixture
def plain_upstream(tmp_path: Path) -> Iterator[Upstream]:
    """A plain HTTP server standing where the secret's host takes TLS (as a
    network observer, or a server that logs what it is sent, would see it)."""
    with echo_upstream("api.test", tmp_path, tls=False) as server:
        yield server


@pytest.mark.parametrize("port", [443, 8443])
async def test_plain_http_to_a_tls_port_never_carries_the_value(
    plain_upstream: Upstream, port: int
) -> None:
    rule = "api.test" if port == 443 else f"api.test:{port}"
    broker = SecretBroker([parse_secret(f"API_KEY:{rule}")], {"API_KEY": API_KEY.encode()})
    token = broker.open("s1", ["API_KEY"])["API_KEY"]
    async with broker_at(broker, "s1", "api.test", port, plain_upstream.port) as at:
        received = await asyncio.to_thread(
            exchange, at, [get("/echo", {"X-Api-Key": token})], tls=None, name="api.test"
        )
    assert API_KEY.encode() not in plain_upstream.seen.all()
    assert API_KEY.encode() not in received
    # relayed all the same, the placeholder a placeholder
    assert echoed(received)["headers"]["X-Api-Key"] == token


Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]
CONNECT = b"CONNECT good.test:%d HTTP/1.1\r\nHost: good.test:%d\r\n\r\n"


async def _tunnel(sockets: SessionSockets, port: int) -> tuple[Stream, bytes]:
    """A CONNECT through ``sockets``' proxy to the silent upstream at ``port``:
    the stream, and the gateway's answer (b"" if it closed the connection)."""
    stream = await asyncio.wait_for(asyncio.open_connection(*sockets.proxy.getsockname()), WAIT)
    stream[1].write(CONNECT % (port, port))
    try:
        answer = await asyncio.wait_for(stream[0].readuntil(b"\r\n\r\n"), WAIT)
    except (asyncio.IncompleteReadError, ConnectionResetError):
        answer = b""
    return stream, answer


async def _tunnels(sockets: SessionSockets, port: int, count: int) -> list[Stream]:
    """``count`` tunnels that the gateway holds open (each answered 200)."""
    held = []
    for _ in range(count):
        stream, answer = await _tunnel(sockets, port)
        held.append(stream)
        assert answer.startswith(b"HTTP/1.1 200"), answer
    return held


@pytest.fixture
async def silent() -> AsyncIterator[int]:
    """An upstream on 127.0.0.2 that accepts and says nothing: its port."""
    writers: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.2", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for writer in writers:
            writer.close()
        server.close()


@pytest.fixture
async def gateway() -> AsyncIterator[EgressGateway]:
    limits = GatewayLimits(head_timeout=30, max_connections=3, max_total=5)
    gateway = EgressGateway(StaticResolver({"good.test": ["127.0.0.2"]}), limits=limits)
    try:
        yield gateway
    finally:
        await asyncio.wait_for(gateway.aclose(), WAIT)


ALLOW = policy(["good.test", "127.0.0.2"])


async def test_the_connection_cap_holds_for_a_session_not_for_each_namespace(
    gateway: EgressGateway, silent: int
) -> None:
    first, second = session_sockets(), session_sockets()
    await gateway.attach("s1/1", ALLOW, first)
    await gateway.attach("s1/2", ALLOW, second)
    held = await _tunnels(first, silent, 3)
    stream, answer = await _tunnel(second, silent)
    for _, writer in [*held, stream]:
        writer.close()
    assert answer == b"", "a fourth connection of the session was served"


async def test_the_gateway_caps_connections_across_sessions(
    gateway: EgressGateway, silent: int
) -> None:
    sockets = {key: session_sockets() for key in ("a/1", "b/1", "c/1")}
    for key, each in sockets.items():
        await gateway.attach(key, ALLOW, each)
    held = await _tunnels(sockets["a/1"], silent, 3)
    held += await _tunnels(sockets["b/1"], silent, 2)
    stream, answer = await _tunnel(sockets["c/1"], silent)
    for _, writer in [*held, stream]:
        writer.close()
    assert answer == b"", "a sixth connection of the gateway was served"


async def test_a_numeric_value_is_never_a_request_length(upstream: Upstream) -> None:
    """A placeholder as ``Content-Length``: were the value put in, the broker
    (and the upstream) would read that many bytes of body, and a client could
    find a numeric secret by how much body gets an answer."""
    value = "12"
    broker = SecretBroker([parse_secret("PIN:api.test")], {"PIN": value.encode()})
    broker.upstream = upstream_context(upstream.ca_file)
    token = broker.open("s1", ["PIN"])["PIN"]
    probe = f"POST /echo HTTP/1.1\r\nHost: api.test\r\nContent-Length: {token}\r\n\r\n"
    async with broker_at(broker, "s1", "api.test", 443, upstream.port) as at:
        received = await asyncio.to_thread(
            exchange,
            at,
            [probe.encode() + b"x" * int(value)],
            tls=client_context(broker),
            name="api.test",
        )
    assert received.startswith(b"HTTP/1.1 400"), received[:200]
    assert upstream.seen.all() == b""


@pytest.mark.parametrize(
    "header", ["Host", "Origin", "Referer", "X-Forwarded-Host", "Range", "User-Agent"]
)
async def test_a_value_is_not_put_where_servers_reflect_it(upstream: Upstream, header: str) -> None:
    """Servers routinely put these back in their answers (a redirect's
    ``Location`` built from ``Host``, CORS's ``Access-Control-Allow-Origin``
    from ``Origin``), and no API takes its key there."""
    broker = SecretBroker([parse_secret("API_KEY:api.test")], {"API_KEY": API_KEY.encode()})
    broker.upstream = upstream_context(upstream.ca_file)
    token = broker.open("s1", ["API_KEY"])["API_KEY"]
    if header == "Host":
        request = f"GET /echo HTTP/1.1\r\nHost: {token}\r\n\r\n".encode()
    else:
        request = get("/echo", {header: f"https://{token}/"})
    async with broker_at(broker, "s1", "api.test", 443, upstream.port) as at:
        received = await asyncio.to_thread(
            exchange, at, [request], tls=client_context(broker), name="api.test"
        )
    assert API_KEY.encode() not in received
    assert API_KEY.encode() not in upstream.seen.all()
    assert token.encode() in upstream.seen.all()  # forwarded, as it was
