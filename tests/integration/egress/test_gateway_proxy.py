"""The gateway's explicit proxy, its limits and its end, over real sockets:
CONNECT (with the SNI in the tunnel checked), absolute URIs, refusals as 403
and failed dials as 502, the connection cap, detach closing what is open, an
interceptor handed what it wants, and garbage that never breaks the loop."""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from collections.abc import AsyncIterator

import pytest

from lmc_runtime.egress.gateway import GatewayLimits
from lmc_runtime.egress.hooks import Dial

from .harness import (
    WAIT,
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
NAMES = {"good.test": ["127.0.0.2"], "evil.test": ["127.0.0.3"], "closed.test": ["127.0.0.4"]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def upstreams() -> AsyncIterator[dict[str, Upstream]]:
    servers = {
        "good": await Upstream("good", "127.0.0.2").start(),
        "good_tls": await Upstream("good-tls", "127.0.0.2", CA.server_context("good.test")).start(),
        "evil": await Upstream("evil", "127.0.0.3").start(),
    }
    yield servers
    for server in servers.values():
        await server.aclose()


async def _connect(
    session: object, target: str
) -> tuple[bytes, asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await session.proxy()  # type: ignore[attr-defined]
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    await writer.drain()
    line = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
    return line, reader, writer


async def _tls_over(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, name: str, context: ssl.SSLContext
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    await asyncio.wait_for(writer.start_tls(context, server_hostname=name), WAIT)
    return reader, writer


async def test_connect_then_tls_to_an_allowed_name(upstreams: dict[str, Upstream]) -> None:
    good_tls = upstreams["good_tls"]
    async with serving(policy(["good.test", "127.0.0.2"]), StaticResolver(NAMES)) as session:
        line, reader, writer = await _connect(session, f"good.test:{good_tls.port}")
        assert line.startswith(b"HTTP/1.1 200")
        stream = await _tls_over(reader, writer, "good.test", client_context(CA))
        assert (await http_get(stream, "/c", "good.test")).endswith(b"good-tls /c")


async def test_connect_with_another_sni_in_the_tunnel_is_cut(
    upstreams: dict[str, Upstream],
) -> None:
    # CONNECT to the allowed name, then a ClientHello naming another: a proxy
    # that only checks CONNECT's host lets the session front through it.
    good_tls = upstreams["good_tls"]
    trusting = ssl.create_default_context(cadata=CA.pem.decode())
    trusting.check_hostname = False
    async with serving(policy(["good.test", "127.0.0.2"]), StaticResolver(NAMES)) as session:
        line, reader, writer = await _connect(session, f"good.test:{good_tls.port}")
        assert line.startswith(b"HTTP/1.1 200")
        with pytest.raises((ConnectionError, ssl.SSLError, OSError)):
            await _tls_over(reader, writer, "evil.test", trusting)
    assert good_tls.seen == []


async def test_connect_refusals_are_403_with_the_reason(upstreams: dict[str, Upstream]) -> None:
    good, good_tls, evil = upstreams["good"], upstreams["good_tls"], upstreams["evil"]
    assert await connected_directly("127.0.0.2", good.port)  # a naive proxy dials it
    allowed = policy([f"good.test:{good_tls.port}", "127.0.0.2"], deny=["127.0.0.2:22"])
    async with serving(allowed, StaticResolver(NAMES)) as session:
        for target in (
            f"good.test:{good.port}",  # the name at a port it is not allowed
            f"evil.test:{evil.port}",  # a name not allowed
            f"127.0.0.3:{evil.port}",  # an address not listed
            "127.0.0.2:22",  # a denied port of a listed address
        ):
            line, _, writer = await _connect(session, target)
            writer.close()
            assert line.startswith(b"HTTP/1.1 403"), (target, line)
    assert good.seen == [] and evil.seen == []


async def test_a_failed_dial_is_502() -> None:
    async with serving(policy(["closed.test", "127.0.0.4"]), StaticResolver(NAMES)) as session:
        line, _, writer = await _connect(session, "closed.test:9")
        writer.close()
        assert line.startswith(b"HTTP/1.1 502")


async def test_absolute_uris_and_their_host_header(upstreams: dict[str, Upstream]) -> None:
    good = upstreams["good"]
    async with serving(policy(["good.test", "127.0.0.2"]), StaticResolver(NAMES)) as session:
        url = f"http://good.test:{good.port}/p?q=1"
        answer = await http_get(await session.proxy(), url, f"good.test:{good.port}")
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"good /p?q=1")
        # the Host header naming another than the URI: a proxy dialling the URI's
        # host and passing the Host on is fronting for it
        refused = await http_get(await session.proxy(), url, "evil.test")
        assert refused.startswith(b"HTTP/1.1 403") and b"Host" in refused
        other = await http_get(await session.proxy(), f"http://evil.test:{good.port}/", None)
        assert other.startswith(b"HTTP/1.1 403")
        garbled = await http_get(await session.proxy(), "ftp://good.test/", None)
        assert garbled.startswith(b"HTTP/1.1 400")
    assert good.seen == [f"good.test:{good.port}"]


async def test_the_connection_cap_and_detach_closing_open_tunnels(
    upstreams: dict[str, Upstream],
) -> None:
    good_tls = upstreams["good_tls"]
    limits = GatewayLimits(head_timeout=30.0, max_connections=2)
    async with serving(
        policy(["good.test", "127.0.0.2"]), StaticResolver(NAMES), limits
    ) as session:
        held = [await _connect(session, f"good.test:{good_tls.port}") for _ in range(2)]
        assert all(line.startswith(b"HTTP/1.1 200") for line, _, _ in held)
        reader, writer = await session.proxy()
        assert await asyncio.wait_for(reader.read(-1), WAIT) == b""  # the third: closed at once
        writer.close()
        egress = session.gateway.session("s1")
        assert egress is not None and len(egress.tasks) == 2
        await asyncio.wait_for(session.gateway.detach("s1"), WAIT)
        for _, held_reader, held_writer in held:
            assert await asyncio.wait_for(held_reader.read(-1), WAIT) == b""
            held_writer.close()
        assert egress.tasks == set() and egress.writers == set()
        assert session.sockets.transparent.fileno() == -1


class _Recorder:
    """An interceptor for good.test: records what it is handed, then relays
    through the gateway's own (checked) dial."""

    def __init__(self) -> None:
        self.handed: list[tuple[str, int, bytes]] = []

    def wants(self, session: str, name: str, port: int) -> bool:
        return name == "good.test"

    async def serve(
        self,
        session: str,
        name: str,
        port: int,
        head: bytes,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        dial: Dial,
    ) -> None:
        self.handed.append((name, port, head))
        reader, writer = await dial(name, port)
        writer.write(head)
        await writer.drain()
        client[1].write(await asyncio.wait_for(reader.read(-1), WAIT))
        await client[1].drain()
        writer.close()
        client[1].close()


async def test_an_interceptor_gets_the_connections_it_wants(upstreams: dict[str, Upstream]) -> None:
    good = upstreams["good"]
    recorder = _Recorder()
    allowed = policy(["good.test", "127.0.0.2"])
    async with serving(allowed, StaticResolver(NAMES), interceptor=recorder) as session:
        answer = await http_get(
            await session.redirected(("127.0.0.2", good.port)), "/i", "good.test"
        )
    assert answer.endswith(b"good /i")
    assert recorder.handed and recorder.handed[0][:2] == ("good.test", good.port)
    assert recorder.handed[0][2].startswith(b"GET /i HTTP/1.1")


async def test_garbage_never_breaks_the_gateway(
    upstreams: dict[str, Upstream], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lmc_runtime.egress")
    good = upstreams["good"]
    rng = random.Random(30)
    limits = GatewayLimits(head_timeout=0.5)
    async with serving(
        policy(["good.test", "127.0.0.2"]), StaticResolver(NAMES), limits
    ) as session:
        for i in range(40):
            if i % 2:
                reader, writer = await session.proxy()
            else:
                reader, writer = await session.redirected(("127.0.0.3", good.port))
            seed = rng.choice([b"\x16\x03\x01\x02\x00\x01", b"CONNECT ", b"GET http://", b""])
            writer.write(seed + bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 3000))))
            try:
                await writer.drain()
                await asyncio.wait_for(reader.read(-1), WAIT)
            except ConnectionError:
                pass
            writer.close()
        # and it still serves
        answer = await http_get(
            await session.redirected(("127.0.0.2", good.port)), "/ok", "good.test"
        )
        assert answer.endswith(b"good /ok")
    assert good.seen == ["good.test"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert "refused" in caplog.text
