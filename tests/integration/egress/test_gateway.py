"""The egress gateway over real sockets on this host: upstream HTTP and HTTPS
servers on 127.0.0.2 (``good.test``, allowed) and 127.0.0.3 (``evil.test``, not),
a session's sockets on 127.0.0.1, clients that connect through them.

The attacks: each says what a naive gateway (dial what the SNI or Host says, or
the address the sandbox dialled; resolve anything) would do, and checks that the
target is reachable from here directly, so that only the gateway stops it.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator

import pytest

from lmc_runtime.egress.dnswire import AAAA, NXDOMAIN, A, build_query, parse_response
from lmc_runtime.egress.resolver import DnsResolver

from .harness import (
    BIG,
    WAIT,
    RecordingDns,
    StaticResolver,
    Upstream,
    certificate_authority,
    client_context,
    connected_directly,
    http_get,
    policy,
    serving,
)

pytestmark = pytest.mark.anyio

CA = certificate_authority()
NAMES = {
    "good.test": ["127.0.0.2"],
    "evil.test": ["127.0.0.3"],
    "rebind.test": ["127.0.0.1"],
    "metadata.test": ["169.254.169.254"],
    "private.test": ["10.255.255.1"],
    "loop6.test": ["::1"],
    "mapped.test": ["::ffff:127.0.0.1"],
}
#: good.test, and its loopback address listed explicitly (else no name reaches it).
ALLOWED = ["good.test", "127.0.0.2"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def upstreams() -> AsyncIterator[dict[str, Upstream]]:
    servers = {
        "good": await Upstream("good", "127.0.0.2").start(),
        "good_tls": await Upstream("good-tls", "127.0.0.2", CA.server_context("good.test")).start(),
        "evil": await Upstream("evil", "127.0.0.3").start(),
        "evil_tls": await Upstream("evil-tls", "127.0.0.3", CA.server_context("evil.test")).start(),
        "host": await Upstream("host", "127.0.0.1").start(),
    }
    yield servers
    for server in servers.values():
        await server.aclose()


async def test_allowed_names_pass_transparently_http_and_https(
    upstreams: dict[str, Upstream],
) -> None:
    good, good_tls = upstreams["good"], upstreams["good_tls"]
    async with serving(policy(ALLOWED), StaticResolver(NAMES)) as session:
        answer = await http_get(
            await session.redirected(("127.0.0.2", good.port)), "/a", "good.test"
        )
        assert answer.endswith(b"good /a")
        tls = await session.redirected(
            ("127.0.0.2", good_tls.port), client_context(CA), "good.test"
        )
        assert (await http_get(tls, "/b", "good.test")).endswith(b"good-tls /b")
        big = await http_get(
            await session.redirected(("127.0.0.2", good.port)), "/big", "good.test"
        )
        assert big.endswith(b"x" * 1000) and len(big) > BIG


async def test_an_ip_literal_not_listed_is_refused(upstreams: dict[str, Upstream]) -> None:
    evil = upstreams["evil"]
    assert await connected_directly("127.0.0.3", evil.port)  # a naive gateway dials it
    async with serving(policy(ALLOWED), StaticResolver(NAMES)) as session:
        assert await http_get(await session.redirected(("127.0.0.3", evil.port)), "/", None) == b""
        # the listed address is reached without a name
        assert (
            await http_get(
                await session.redirected(("127.0.0.2", upstreams["good"].port)), "/", None
            )
        ).endswith(b"good /")
    assert evil.seen == []


async def test_sni_of_an_allowed_name_to_another_address_is_refused(
    upstreams: dict[str, Upstream],
) -> None:
    # Dial evil's address, say good.test in the SNI: a gateway that checks the
    # SNI and splices to the address dialled lets it through.
    evil_tls = upstreams["evil_tls"]
    assert await connected_directly("127.0.0.3", evil_tls.port)
    trusting = ssl.create_default_context(cadata=CA.pem.decode())
    trusting.check_hostname = False
    async with serving(policy(ALLOWED), StaticResolver(NAMES)) as session:
        with pytest.raises((ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, OSError)):
            tls = await session.redirected(("127.0.0.3", evil_tls.port), trusting, "good.test")
            await http_get(tls, "/", "good.test")
    assert evil_tls.seen == []


async def test_sni_of_a_denied_name_to_an_allowed_address_is_refused(
    upstreams: dict[str, Upstream],
) -> None:
    good_tls = upstreams["good_tls"]
    trusting = ssl.create_default_context(cadata=CA.pem.decode())
    trusting.check_hostname = False
    async with serving(
        policy(["good.test"]), StaticResolver({"good.test": ["127.0.0.2"]})
    ) as session:
        with pytest.raises((ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, OSError)):
            tls = await session.redirected(("127.0.0.2", good_tls.port), trusting, "evil.test")
            await http_get(tls, "/", "evil.test")
    assert good_tls.seen == []


async def test_host_header_mismatches_are_refused(upstreams: dict[str, Upstream]) -> None:
    good, evil = upstreams["good"], upstreams["evil"]
    async with serving(policy(ALLOWED), StaticResolver(NAMES)) as session:
        # an allowed Host towards evil's address: a naive gateway trusts the Host and splices
        assert (
            await http_get(await session.redirected(("127.0.0.3", evil.port)), "/", "good.test")
            == b""
        )
        # a denied Host towards an allowed address: a naive address-only check passes it
        assert (
            await http_get(await session.redirected(("127.0.0.2", good.port)), "/", "evil.test")
            == b""
        )
    assert evil.seen == [] and good.seen == []


async def test_a_second_request_on_the_connection_cannot_change_host(
    upstreams: dict[str, Upstream],
) -> None:
    good = upstreams["good"]
    async with serving(policy(ALLOWED), StaticResolver(NAMES)) as session:
        reader, writer = await session.redirected(("127.0.0.2", good.port))
        writer.write(b"GET /1 HTTP/1.1\r\nHost: good.test\r\nConnection: keep-alive\r\n\r\n")
        writer.write(b"GET /2 HTTP/1.1\r\nHost: evil.test\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(-1), WAIT)
        writer.close()
    assert answer.endswith(b"good /1") and good.seen == ["good.test"]


@pytest.mark.parametrize(
    "name", ["rebind.test", "metadata.test", "private.test", "loop6.test", "mapped.test"]
)
async def test_names_resolving_inside_are_refused(
    upstreams: dict[str, Upstream], name: str
) -> None:
    host = upstreams["host"]
    assert await connected_directly(
        "127.0.0.1", host.port
    )  # a gateway resolving anything reaches it
    async with serving(policy([name, "good.test"]), StaticResolver(NAMES)) as session:
        reader, writer = await session.proxy()
        writer.write(f"CONNECT {name}:{host.port} HTTP/1.1\r\n\r\n".encode())
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(-1), WAIT)
        assert answer.startswith(b"HTTP/1.1 403") and b"is allowed" in answer
        writer.close()
        # transparently too: the sandbox dials what the name resolves to
        dialled = await session.redirected((NAMES[name][0].removeprefix("::ffff:"), host.port))
        assert await http_get(dialled, "/", name) == b""
    assert host.seen == []


async def test_dns_answers_allowed_names_only_and_never_forwards_others() -> None:
    upstream = RecordingDns(
        {"good.test": ["127.0.0.2"], "rebind.test": ["127.0.0.1", "93.184.216.34"]}
    )
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(
        lambda: upstream, local_addr=("127.0.0.1", 0)
    )
    resolver = DnsResolver(transport.get_extra_info("sockname"), timeout=2.0)
    try:
        async with serving(policy(["good.test", "127.0.0.2", "rebind.test"]), resolver) as session:
            ask = _Asker(session.address("dns_udp"))
            assert await ask("good.test", A) == (0, ["127.0.0.2"])
            assert await ask("secret-data.evil.test", A) == (NXDOMAIN, [])
            assert await ask("c2VjcmV0.evil.test", AAAA) == (NXDOMAIN, [])
            # rebinding: only the outside address is kept
            assert await ask("rebind.test", A) == (0, ["93.184.216.34"])
            assert await _tcp_ask(session.address("dns_tcp"), "good.test") == (0, ["127.0.0.2"])
            gateway_dns = session.gateway.session("s1")
            assert gateway_dns is not None and gateway_dns.dns.answered("good.test") == {
                "127.0.0.2"
            }
    finally:
        transport.close()
    assert (
        "secret-data.evil.test" not in upstream.asked and "c2VjcmV0.evil.test" not in upstream.asked
    )
    assert "good.test" in upstream.asked  # the same path does reach the upstream for allowed names


class _Asker:
    def __init__(self, server: tuple[str, int]) -> None:
        self.server = server

    async def __call__(self, name: str, qtype: int) -> tuple[int, list[str]]:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setblocking(False)
        try:
            query = build_query(42, name, qtype)
            assert query is not None
            loop = asyncio.get_running_loop()
            await loop.sock_sendto(sock, query, self.server)
            data = await asyncio.wait_for(loop.sock_recv(sock, 4096), WAIT)
        finally:
            sock.close()
        parsed = parse_response(data, 42, qtype)
        assert parsed is not None
        return parsed[0], parsed[2]


async def _tcp_ask(server: tuple[str, int], name: str) -> tuple[int, list[str]]:
    reader, writer = await asyncio.open_connection(*server)
    query = build_query(43, name, A)
    assert query is not None
    writer.write(len(query).to_bytes(2, "big") + query)
    length = int.from_bytes(await asyncio.wait_for(reader.readexactly(2), WAIT), "big")
    data = await asyncio.wait_for(reader.readexactly(length), WAIT)
    writer.close()
    parsed = parse_response(data, 43, A)
    assert parsed is not None
    return parsed[0], parsed[2]
