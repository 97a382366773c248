"""A session's DNS server, on the sockets its namespace's ``resolv.conf`` names.

It answers A and AAAA queries for the names the session's policy allows,
resolving them through the gateway's :class:`~.resolver.Resolver` and keeping
only the addresses the policy allows for them. Every other query gets NXDOMAIN
(a name the policy does not allow), an empty answer (another type of record of
an allowed name), REFUSED (not a standard query) or FORMERR, and is never sent
on: a query for ``<secret>.evil.example`` does not leave the host, so DNS
cannot carry data out. It remembers which addresses it gave for which name
(see :meth:`SessionDns.answered`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from collections import OrderedDict
from typing import cast

from .dnswire import (
    AAAA,
    FORMERR,
    MAX_MESSAGE,
    NOERROR,
    NXDOMAIN,
    REFUSED,
    SERVFAIL,
    A,
    build_response,
    parse_query,
    rcode_only,
)
from .policy import EgressPolicy
from .resolver import Resolver

__all__ = ["SessionDns"]

logger = logging.getLogger(__name__)

#: Seconds a client may cache an answer: short, so that names follow their DNS.
TTL = 30
#: Queries answered at once for one session; more are dropped (UDP) or wait (TCP).
MAX_PENDING = 64
#: Names whose answers are remembered, per session (the oldest are forgotten).
MAX_REMEMBERED = 4096
#: Seconds a DNS-over-TCP connection may stay idle; connections at once.
TCP_IDLE = 10.0
MAX_TCP = 16
#: The longest answer over UDP (RFC 1035; longer ones are truncated, and asked again over TCP).
UDP_LIMIT = 512
#: Names resolved for one session (its DNS and its connections): this many at
#: once, then this many a second (more are answered SERVFAIL, or refused, and
#: never asked; a name asked again within :data:`TTL` is answered as before).
#: A session asking for random names under an allowed wildcard made the server
#: send 3,000 queries a second to its resolver, each carrying what the session
#: put in the name.
BURST = 200
RATE = 50.0


class _Bucket:
    """A token bucket: :meth:`take` is true while there are tokens."""

    def __init__(self, burst: int, rate: float) -> None:
        self.burst, self.rate = burst, rate
        self.tokens = float(burst)
        self.last = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, dns: SessionDns) -> None:
        self.dns = dns
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Python 3.11's selector transport for UDP is no DatagramTransport subclass.
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.dns.spawn(self._reply(data, addr))

    async def _reply(self, data: bytes, addr: tuple[str, int]) -> None:
        answer = await self.dns.answer(data, limit=UDP_LIMIT)
        if answer is not None and self.transport is not None and not self.transport.is_closing():
            self.transport.sendto(answer, addr)


class SessionDns:
    """The DNS server of session ``key`` under ``policy``."""

    def __init__(self, key: str, policy: EgressPolicy, resolver: Resolver) -> None:
        self.key, self.policy, self.resolver = key, policy, resolver
        self._answered: OrderedDict[str, set[str]] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        self._transport: asyncio.DatagramTransport | None = None
        self._server: asyncio.Server | None = None
        self._tcp_writers: set[asyncio.StreamWriter] = set()
        self._bucket = _Bucket(BURST, RATE)
        self._lookups: OrderedDict[str, tuple[float, tuple[str, ...]]] = OrderedDict()
        self._throttled = False

    def answered(self, name: str) -> set[str]:
        """The addresses this server gave for ``name`` (lowercase, no final dot)."""
        return set(self._answered.get(name.lower().rstrip("."), ()))

    def spawn(self, coro: object) -> None:
        """Run ``coro`` as a tracked task, unless too many already run (then drop it)."""
        assert asyncio.iscoroutine(coro)
        if len(self._tasks) >= MAX_PENDING:
            coro.close()
            return
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def start(self, udp: socket.socket, tcp: socket.socket) -> None:
        """Serve ``udp`` and ``tcp`` (listening) until :meth:`aclose`."""
        loop = asyncio.get_running_loop()
        udp.setblocking(False)
        transport, _ = await loop.create_datagram_endpoint(lambda: _Udp(self), sock=udp)
        self._transport = transport
        self._server = await asyncio.start_server(self._tcp_client, sock=tcp)

    async def aclose(self) -> None:
        if self._transport is not None:
            self._transport.close()
        if self._server is not None:
            self._server.close()
        for writer in list(self._tcp_writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def answer(self, data: bytes, limit: int = MAX_MESSAGE) -> bytes | None:
        """The answer to the message ``data`` (None: drop it), at most ``limit``
        bytes. Never raises."""
        try:
            return await self._answer(data, limit)
        except Exception:  # a bug must not end the server: log it, answer SERVFAIL
            logger.exception("session %s: DNS query failed", self.key)
            return rcode_only(data, SERVFAIL)

    async def _answer(self, data: bytes, limit: int) -> bytes | None:
        query = parse_query(data)
        if query is None:
            return rcode_only(data, FORMERR)
        if query.opcode != 0 or query.qclass != 1:
            return rcode_only(data, REFUSED)
        name = query.name
        if not self.policy.allows_name(name, None):
            logger.info("session %s: DNS refused %r (not allowed)", self.key, name[:255])
            return build_response(query, NXDOMAIN, [], TTL)
        if query.qtype not in (A, AAAA):
            return build_response(query, NOERROR, [], TTL)
        found = await self.lookup(name)
        if found is None:
            return build_response(query, SERVFAIL, [], TTL)
        kept = [address for address in found if self.policy.allows_resolved(name, address, None)]
        dropped = sorted(set(found) - set(kept))
        if dropped:
            logger.info("session %s: DNS for %s left out %s (not allowed)", self.key, name, dropped)
        if kept:
            self._remember(name, kept)
        return build_response(query, NOERROR, kept, TTL, limit)

    async def lookup(self, name: str) -> list[str] | None:
        """``name``'s addresses through the gateway's resolver (its answer of the
        last :data:`TTL` seconds, if any; the session's DNS and its connections
        share it). None when the session resolves names faster than
        :data:`RATE` allows."""
        now = time.monotonic()
        cached = self._lookups.get(name)
        if cached is not None and now - cached[0] < TTL:
            return list(cached[1])
        if not self._bucket.take():
            if not self._throttled:
                logger.info("session %s: over %d names a second, not resolved", self.key, RATE)
            self._throttled = True
            return None
        self._throttled = False
        found = await self.resolver.resolve(name)
        self._lookups.pop(name, None)
        self._lookups[name] = (now, tuple(found))
        while len(self._lookups) > MAX_REMEMBERED:
            self._lookups.popitem(last=False)
        return found

    def _remember(self, name: str, addresses: list[str]) -> None:
        known = self._answered.pop(name, set())
        known.update(addresses)
        self._answered[name] = known
        while len(self._answered) > MAX_REMEMBERED:
            self._answered.popitem(last=False)

    async def _tcp_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._tcp_writers) >= MAX_TCP:
            writer.close()
            return
        self._tcp_writers.add(writer)
        try:
            while True:
                head = await asyncio.wait_for(reader.readexactly(2), TCP_IDLE)
                (length,) = struct.unpack("!H", head)
                data = await asyncio.wait_for(reader.readexactly(length), TCP_IDLE)
                answer = await self.answer(data)
                if answer is None:
                    break
                writer.write(struct.pack("!H", len(answer)) + answer)
                await asyncio.wait_for(writer.drain(), TCP_IDLE)
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tcp_writers.discard(writer)
            writer.close()
