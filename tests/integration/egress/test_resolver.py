"""The gateway's resolvers over real sockets: the host's, and the DNS client
(UDP, TCP when the answer is truncated, bounded when the server is silent)."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable

import pytest

from lmc_runtime.egress.dnswire import NOERROR, build_response, parse_query
from lmc_runtime.egress.resolver import DnsResolver, SystemResolver, parse_server

from .harness import RecordingDns

pytestmark = pytest.mark.anyio

MANY = [f"93.184.{i // 200}.{i % 200 + 1}" for i in range(60)]  # more than 512 bytes of A records


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_dns_server_addresses() -> None:
    assert parse_server("127.0.0.53") == ("127.0.0.53", 53)
    assert parse_server("10.0.0.2:5353") == ("10.0.0.2", 5353)
    assert parse_server("[2001:db8::53]:53") == ("2001:db8::53", 53)
    for bad in ("dns.example:53", "10.0.0.2:0", "10.0.0.2:x", "[::1]x"):
        with pytest.raises(ValueError):
            parse_server(bad)


async def test_the_hosts_resolver_answers_localhost() -> None:
    assert "127.0.0.1" in await SystemResolver().resolve("localhost")
    assert await SystemResolver(timeout=5).resolve("no-such-name.invalid") == []


async def test_a_truncated_answer_is_asked_again_over_tcp() -> None:
    loop = asyncio.get_running_loop()
    udp = RecordingDns({"many.test": MANY})
    # A port number free for both TCP and UDP: a UDP port's number may be another
    # process's TCP port (CI: "address already in use"), so a few are tried.
    for _ in range(20):
        held = socket.create_server(("127.0.0.1", 0))
        host, port = held.getsockname()
        try:
            transport, _ = await loop.create_datagram_endpoint(lambda: udp, local_addr=(host, port))
            break
        except OSError:
            held.close()
    else:
        pytest.fail("no port number free for both TCP and UDP in 20 tries")
    asked_tcp: list[str] = []

    async def tcp_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        length = struct.unpack("!H", await reader.readexactly(2))[0]
        query = parse_query(await reader.readexactly(length))
        assert query is not None
        asked_tcp.append(query.name)
        answer = build_response(query, NOERROR, MANY, 60)
        writer.write(struct.pack("!H", len(answer)) + answer)
        await writer.drain()
        writer.close()

    udp.datagram_received = _truncating(udp)  # type: ignore[method-assign]
    server = await asyncio.start_server(tcp_client, sock=held)
    try:
        found = await DnsResolver((host, port), timeout=2.0).resolve("many.test")
    finally:
        server.close()
        transport.close()
    assert sorted(found) == sorted(MANY) and asked_tcp == ["many.test"]


def _truncating(dns: RecordingDns) -> Callable[[bytes, tuple[str, int]], None]:
    """Answers as a real server does over UDP: truncated at 512 bytes."""

    def receive(data: bytes, addr: tuple[str, int]) -> None:
        query = parse_query(data)
        if query is None or dns.transport is None:
            return
        dns.asked.append(query.name)
        dns.transport.sendto(
            build_response(query, NOERROR, dns.names.get(query.name, []), 60, limit=512), addr
        )

    return receive


async def test_a_silent_server_gives_no_address_in_bounded_time() -> None:
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        found = await DnsResolver(silent.getsockname(), timeout=0.3, tries=2).resolve("x.test")
        assert found == [] and loop.time() - started < 5
    finally:
        silent.close()
