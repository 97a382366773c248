"""How the gateway resolves the names a policy allows.

:class:`SystemResolver` asks the host's own resolver (``getaddrinfo``);
:class:`DnsResolver` asks one DNS server (``lmc serve --egress-dns HOST:PORT``)
with a small client: A and AAAA over UDP, again over TCP when the answer is
truncated, every wait bounded. Either gives the addresses as text, both
families, and an empty list when the name has none or the resolver fails (the
failure is logged). Only names the policy allows are ever given to them.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import secrets
import socket
import struct
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from .dnswire import AAAA, MAX_MESSAGE, A, build_query, parse_response

__all__ = ["DnsResolver", "Resolver", "SystemResolver", "parse_server"]

logger = logging.getLogger(__name__)


class Resolver(Protocol):
    """Resolves a name to its addresses (IPv4 and IPv6, as text)."""

    async def resolve(self, name: str) -> list[str]: ...


#: Threads that wait on the host's resolver at once (across every session).
RESOLVER_THREADS = 4


class SystemResolver:
    """The host's resolver, through ``getaddrinfo`` (bounded by ``timeout``).

    ``getaddrinfo`` blocks a thread until the system gives up, past ``timeout``
    when a name's DNS servers do not answer: it runs on threads of its own
    (:data:`RESOLVER_THREADS`), never on the loop's default executor, which the
    rest of the server needs (a session asking for many slow names would
    otherwise stall every session's file operations and launches)."""

    def __init__(self, timeout: float = 5.0, threads: int = RESOLVER_THREADS) -> None:
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="lmc-egress-resolver")

    async def resolve(self, name: str) -> list[str]:
        loop = asyncio.get_running_loop()
        ask = functools.partial(socket.getaddrinfo, name, None, type=socket.SOCK_STREAM)
        try:
            infos = await asyncio.wait_for(loop.run_in_executor(self._pool, ask), self.timeout)
        except (OSError, TimeoutError, UnicodeError) as exc:
            logger.info("the host's resolver has no address for %s: %s", name, exc)
            return []
        return list(dict.fromkeys(str(info[4][0]).partition("%")[0] for info in infos))


def parse_server(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[V6]:PORT`` of ``--egress-dns`` (the port defaults to 53);
    ValueError if it is no address."""
    host, port = text.strip(), "53"
    if host.startswith("["):
        host, _, rest = host[1:].partition("]")
        if rest:
            port = rest.removeprefix(":")
    elif host.count(":") == 1:
        host, _, port = host.partition(":")
    ipaddress.ip_address(host)  # an address, so that resolving it needs no resolver
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r}: {port!r} is not a port")
    return host, int(port)


class _Once(asyncio.DatagramProtocol):
    def __init__(self, ident: int, qtype: int) -> None:
        self.answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.ident, self.qtype = ident, qtype

    def datagram_received(self, data: bytes, addr: object) -> None:
        if not self.answer.done() and parse_response(data, self.ident, self.qtype) is not None:
            self.answer.set_result(data)


class DnsResolver:
    """Asks the DNS server at ``server`` (host, port) for A and AAAA records."""

    def __init__(self, server: tuple[str, int], timeout: float = 2.0, tries: int = 2) -> None:
        self.server, self.timeout, self.tries = server, timeout, tries

    async def resolve(self, name: str) -> list[str]:
        answers = await asyncio.gather(self._ask(name, A), self._ask(name, AAAA))
        return [address for found in answers for address in found]

    async def _ask(self, name: str, qtype: int) -> list[str]:
        for _ in range(self.tries):
            ident = secrets.randbits(16)
            query = build_query(ident, name, qtype)
            if query is None:
                return []
            try:
                data = await self._udp(query, ident, qtype)
                parsed = parse_response(data, ident, qtype)
                if parsed is not None and parsed[1]:
                    data = await self._tcp(query)
                    parsed = parse_response(data, ident, qtype)
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                logger.info(
                    "DNS server %s:%d: %s for %s", *self.server, str(exc) or "timed out", name
                )
                continue
            if parsed is not None:
                return parsed[2] if parsed[0] == 0 else []
        return []

    async def _udp(self, query: bytes, ident: int, qtype: int) -> bytes:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.create_datagram_endpoint(
            lambda: _Once(ident, qtype), remote_addr=self.server
        )
        try:
            transport.sendto(query)
            return await asyncio.wait_for(protocol.answer, self.timeout)
        finally:
            transport.close()

    async def _tcp(self, query: bytes) -> bytes:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(*self.server), self.timeout)
        try:
            writer.write(struct.pack("!H", len(query)) + query)
            head = await asyncio.wait_for(reader.readexactly(2), self.timeout)
            (length,) = struct.unpack("!H", head)
            return await asyncio.wait_for(
                reader.readexactly(min(length, MAX_MESSAGE)), self.timeout
            )
        finally:
            writer.close()
