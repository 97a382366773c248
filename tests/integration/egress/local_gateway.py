"""A small gateway for the namespace tests: it serves a session's handed-over
sockets under its policy (DNS by the package's own server, the transparent path
by ``SO_ORIGINAL_DST``, the explicit proxy for absolute-URI requests) and dials
the local upstream servers. It stands in for :mod:`lmc_runtime.egress.gateway`
where the tests look at the namespace and the handover, not at the gateway."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from lmc_runtime.egress.dns import SessionDns
from lmc_runtime.egress.hooks import SessionSockets
from lmc_runtime.egress.policy import EgressPolicy

_SO_ORIGINAL_DST = 80


class MapResolver:
    """Names of the test's upstream servers, by a fixed table."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table

    async def resolve(self, name: str) -> list[str]:
        return list(self.table.get(name, []))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


async def _relay(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    head: bytes = b"",
) -> None:
    if head:
        upstream[1].write(head)
    await asyncio.gather(_pipe(client[0], upstream[1]), _pipe(upstream[0], client[1]))


@dataclass
class LocalGateway:
    resolver: MapResolver
    attached: dict[str, list[object]] = field(default_factory=dict)
    detached: list[str] = field(default_factory=list)
    #: (address, port) of every connection the gateway dialled.
    dialled: list[tuple[str, int]] = field(default_factory=list)

    async def attach(self, key: str, policy: EgressPolicy, sockets: SessionSockets) -> None:
        dns = SessionDns(key, policy, self.resolver)
        await dns.start(sockets.dns_udp, sockets.dns_tcp)

        async def transparent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            raw = writer.get_extra_info("socket").getsockopt(socket.SOL_IP, _SO_ORIGINAL_DST, 16)
            port, packed = struct.unpack_from("!2xH4s", raw)
            address = socket.inet_ntoa(packed)
            if not policy.allows_address(address, port):
                writer.close()
                return
            await self._dial((reader, writer), address, port)

        async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, rest = head.split(b" ", 2)
            url = urlsplit(target.decode("ascii"))
            name, port = url.hostname or "", url.port or 80
            addresses = [
                a
                for a in await self.resolver.resolve(name)
                if policy.allows_resolved(name, a, port)
            ]
            if not addresses:
                writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                writer.close()
                return
            line = b" ".join([method, (url.path or "/").encode("ascii"), rest])
            await self._dial((reader, writer), addresses[0], port, line)

        servers = [
            await asyncio.start_server(transparent, sock=sockets.transparent),
            await asyncio.start_server(proxy, sock=sockets.proxy),
        ]
        self.attached[key] = [dns, *servers]

    async def _dial(
        self,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        address: str,
        port: int,
        head: bytes = b"",
    ) -> None:
        self.dialled.append((address, port))
        try:
            upstream = await asyncio.open_connection(address, port)
        except OSError:
            client[1].close()
            return
        await _relay(client, upstream, head)

    async def detach(self, key: str) -> None:
        dns, *servers = self.attached.pop(key)
        assert isinstance(dns, SessionDns)
        await dns.aclose()
        for server in servers:
            assert isinstance(server, asyncio.Server)
            server.close()
        self.detached.append(key)
