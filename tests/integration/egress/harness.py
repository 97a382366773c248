"""Real sockets on this host for the gateway's tests: upstream HTTP(S) servers on
loopback addresses of their own, a session's four listening sockets, clients
that connect through them, and a DNS server that records what it is asked."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import cast

from lmc_runtime.egress.ca import EgressCA
from lmc_runtime.egress.dnswire import NOERROR, NXDOMAIN, build_response, parse_query
from lmc_runtime.egress.gateway import EgressGateway, GatewayLimits
from lmc_runtime.egress.hooks import SessionSockets
from lmc_runtime.egress.policy import EgressPolicy, parse_entries

#: A bounded wait for anything a test waits on.
WAIT = 10.0
BIG = 5 * 1024 * 1024


class StaticResolver:
    """Names to addresses, as a test's DNS would give them; records what it was asked."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names
        self.asked: list[str] = []

    async def resolve(self, name: str) -> list[str]:
        self.asked.append(name)
        return list(self.names.get(name, []))


@dataclass
class Upstream:
    """An HTTP server (HTTPS with ``tls``) at ``host``; ``seen``: the Host
    header of every request it answered."""

    label: str
    host: str
    tls: ssl.SSLContext | None = None
    port: int = 0
    seen: list[str] = field(default_factory=list)
    server: asyncio.Server | None = None

    async def start(self) -> Upstream:
        self.server = await asyncio.start_server(self._serve, self.host, 0, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """HTTP/1.1 with keep-alive: requests until one says ``Connection: close``."""
        try:
            while True:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                fields = dict(
                    (ln.split(":", 1)[0].lower(), ln.split(":", 1)[1].strip())
                    for ln in lines[1:]
                    if ":" in ln
                )
                self.seen.append(fields.get("host", ""))
                body = b"x" * BIG if path == "/big" else f"{self.label} {path}".encode()
                closing = fields.get("connection", "").lower() == "close"
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n"
                    % (len(body), b"Connection: close\r\n" if closing else b"")
                )
                writer.write(body)
                await asyncio.wait_for(writer.drain(), WAIT)
                if closing:
                    break
        except (OSError, asyncio.IncompleteReadError, TimeoutError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def aclose(self) -> None:
        if self.server is not None:
            self.server.close()


class RecordingDns(asyncio.DatagramProtocol):
    """An upstream DNS server on loopback: answers from ``names``, records every query."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names
        self.asked: list[str] = []
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        query = parse_query(data)
        if query is None or self.transport is None:
            return
        self.asked.append(query.name)
        found = self.names.get(query.name)
        reply = build_response(query, NOERROR if found else NXDOMAIN, found or [], 60)
        self.transport.sendto(reply, addr)


def policy(allow: list[str], deny: list[str] | None = None) -> EgressPolicy:
    """A policy for the tests (the host's own addresses as this host has them)."""
    return EgressPolicy(parse_entries(allow, "allow"), parse_entries(deny or [], "deny"))


def session_sockets() -> SessionSockets:
    """Four listening sockets on 127.0.0.1, as the sandbox side makes them in a namespace."""

    def tcp() -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        return sock

    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    return SessionSockets(transparent=tcp(), proxy=tcp(), dns_udp=udp, dns_tcp=tcp())


class Session:
    """A gateway serving one session's sockets; ``dests``: where each client's
    connection (by its source port) "was going" before the firewall's redirect."""

    def __init__(self, gateway: EgressGateway, sockets: SessionSockets) -> None:
        self.gateway, self.sockets = gateway, sockets
        self.dests: dict[int, tuple[str, int]] = {}

    def address(self, which: str) -> tuple[str, int]:
        return getattr(self.sockets, which).getsockname()  # type: ignore[no-any-return]

    async def redirected(
        self,
        dest: tuple[str, int],
        tls: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to ``dest`` as the namespace's firewall hands it over."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.dests[sock.getsockname()[1]] = dest
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, self.address("transparent"))
        return await asyncio.wait_for(
            asyncio.open_connection(sock=sock, ssl=tls, server_hostname=server_hostname), WAIT
        )

    def original_destination(self, sock: socket.socket) -> tuple[str, int]:
        return self.dests[sock.getpeername()[1]]

    async def proxy(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.wait_for(asyncio.open_connection(*self.address("proxy")), WAIT)


@contextlib.asynccontextmanager
async def serving(
    allowed: EgressPolicy,
    resolver: object,
    limits: GatewayLimits | None = None,
    interceptor: object = None,
) -> AsyncIterator[Session]:
    """A gateway with one session attached under ``allowed``; detached at the end."""
    holder: list[Session] = []
    gateway = EgressGateway(
        resolver,  # type: ignore[arg-type]
        limits=limits or GatewayLimits(head_timeout=2.0, dial_timeout=5.0, idle_timeout=30.0),
        original_destination=lambda sock: holder[0].original_destination(sock),
    )
    sockets = session_sockets()
    session = Session(gateway, sockets)
    holder.append(session)
    await gateway.attach("s1", allowed, sockets, interceptor)  # type: ignore[arg-type]
    try:
        yield session
    finally:
        await asyncio.wait_for(gateway.aclose(), WAIT)


async def http_get(
    stream: tuple[asyncio.StreamReader, asyncio.StreamWriter], target: str, host: str | None
) -> bytes:
    """Send one request; the whole answer until the other side closes (b"" if refused)."""
    reader, writer = stream
    head = f"GET {target} HTTP/1.1\r\n" + (f"Host: {host}\r\n" if host else "")
    head += "Connection: close\r\n\r\n"
    try:
        writer.write(head.encode())
        await writer.drain()
        return await asyncio.wait_for(reader.read(-1), WAIT)
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return b""
    finally:
        writer.close()


async def connected_directly(host: str, port: int) -> bool:
    """Whether the test itself reaches ``host:port`` (so only the gateway stands in the way)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), WAIT)
    except OSError:
        return False
    writer.close()
    return True


def certificate_authority() -> EgressCA:
    return EgressCA("lmc-runtime tests' upstream CA")


def client_context(ca: EgressCA) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.pem.decode())
