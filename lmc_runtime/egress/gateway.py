"""The server's egress gateway: one per server, in its event loop, serving the
listening sockets of every session with a policy.

For each session (:meth:`EgressGateway.attach`) it serves:

* its DNS (:class:`~.dns.SessionDns`): only allowed names are answered;
* its **transparent** socket, where the namespace's firewall redirects every
  outgoing TCP connection: the gateway reads the connection's first bytes; a
  TLS ClientHello's SNI or an HTTP Host header names where it goes, and that
  name must be allowed, and resolve (through the gateway's resolver, or the
  session's DNS answers) to the address the sandbox dialled (else it is domain
  fronting, or DNS of its own). Without a name, the address must be allowed as
  an address entry;
* its explicit **proxy** socket: ``CONNECT host:port`` (the TLS ClientHello's
  SNI in the tunnel, if any, must be that host) and absolute-URI requests
  (their Host header, if any, must be the URI's host); refusals are answered
  ``403`` with the reason, failed dials ``502``.

Either way the gateway itself resolves an allowed name, dials only the
addresses the policy allows for it, and splices (or hands the connection to the
session's :class:`~.hooks.Interceptor` when it wants it). Plain HTTP requests
are rewritten to be their connection's only one, so that a second request with
another Host needs a connection, and a check, of its own. Refusals are logged at
INFO; nothing a session sends raises in the server's loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import resource
import socket
from collections.abc import Callable
from dataclasses import dataclass, field

from .connections import serve_proxy, serve_transparent
from .dns import SessionDns
from .hooks import Interceptor, SessionSockets
from .policy import EgressPolicy
from .resolver import Resolver, SystemResolver
from .splice import GatewayLimits, Refused, close_writer, original_destination

__all__ = ["EgressGateway", "GatewayLimits", "Refused"]

logger = logging.getLogger(__name__)


@dataclass
class SessionEgress:
    """One attached session: its policy, its DNS, what serves and what is open."""

    key: str
    policy: EgressPolicy
    sockets: SessionSockets
    interceptor: Interceptor | None
    dns: SessionDns
    gateway: EgressGateway
    servers: list[asyncio.Server] = field(default_factory=list)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    writers: set[asyncio.StreamWriter] = field(default_factory=set)
    closed: bool = False

    def refuse(self, what: str, reason: str) -> Refused:
        logger.info("egress of session %s: refused %s: %s", self.key, what, reason)
        return Refused(reason)

    async def dial(
        self, name: str, port: int, prefer: str | None = None, found: list[str] | None = None
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to an allowed ``name`` at ``port``, at an address the
        policy allows for it (``prefer`` first, if it is one; ``found``: the
        name's addresses, if just resolved). :class:`Refused` when none is;
        OSError when none answers."""
        if not self.policy.allows_name(name, port):
            raise self.refuse(f"{name}:{port}", "the name is not allowed")
        if found is None:
            found = await self.resolve(name)
        allowed = [a for a in found if self.policy.allows_resolved(name, a, port)]
        if prefer is not None and prefer in allowed:
            allowed.remove(prefer)
            allowed.insert(0, prefer)
        if not allowed:
            why = "it has no address" if not found else f"none of its addresses {found} is allowed"
            raise self.refuse(f"{name}:{port}", why)
        return await self.gateway.connect(allowed, port)

    async def resolve(self, name: str) -> list[str]:
        """``name``'s addresses (an allowed name), at the rate the session may
        resolve names: :class:`Refused` over it."""
        found = await self.dns.lookup(name)
        if found is None:
            raise self.refuse(name, "the session resolves names too fast; try again shortly")
        return found

    async def serve(
        self, kind: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Serve one accepted connection; close it however it ends."""
        task = asyncio.current_task()
        if self.closed or task is None or not self.gateway.admit(self.key):
            close_writer(writer)
            return
        self.tasks.add(task)  # type: ignore[arg-type]
        self.writers.add(writer)
        try:
            if kind == "proxy":
                await serve_proxy(self, reader, writer)
            else:
                await serve_transparent(self, reader, writer)
        except (Refused, OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # detach: this task is the connection's own, awaited by no one but
            # detach (asyncio's streams would log its cancellation as an error)
            pass
        except Exception:
            logger.exception("egress of session %s: a %s connection failed", self.key, kind)
        finally:
            self.tasks.discard(task)  # type: ignore[arg-type]
            self.writers.discard(writer)
            close_writer(writer)
            self.gateway.release(self.key)


def _total_cap(wanted: int) -> int:
    """``wanted``, and at most an eighth of the open-file limit: a connection
    takes two or three of the server's descriptors, and the API's clients (half
    the limit) and the sessions need the rest."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return min(wanted, max(64, soft // 8))


class EgressGateway:
    """Serves the sockets of sessions with a policy (see the module's text).

    ``resolver``: how allowed names are resolved (the host's resolver unless
    given). ``interceptor``: the one sessions attached without their own get
    (the server's secrets broker). ``original_destination``: where a redirected
    connection was going (``SO_ORIGINAL_DST``; tests replace it)."""

    def __init__(
        self,
        resolver: Resolver | None = None,
        *,
        interceptor: Interceptor | None = None,
        limits: GatewayLimits | None = None,
        original_destination: Callable[[socket.socket], tuple[str, int]] = original_destination,
    ) -> None:
        self.resolver: Resolver = resolver or SystemResolver()
        self.interceptor = interceptor
        self.limits = limits or GatewayLimits()
        self.original_destination = original_destination
        self._sessions: dict[str, SessionEgress] = {}
        #: Open connections by session (every namespace of one counted), and in all.
        self._open: dict[str, int] = {}
        self._total = 0
        self.max_total = _total_cap(self.limits.max_total)

    def session(self, key: str) -> SessionEgress | None:
        return self._sessions.get(key)

    def admit(self, key: str) -> bool:
        """Count a new connection of ``key`` (``<session>/<n>``: one namespace of
        a session), unless its session or the gateway holds as many as allowed."""
        session = key.partition("/")[0]
        held = self._open.get(session, 0)
        if held >= self.limits.max_connections or self._total >= self.max_total:
            logger.info("egress of session %s: a connection over the cap closed", key)
            return False
        self._open[session] = held + 1
        self._total += 1
        return True

    def release(self, key: str) -> None:
        """A connection that :meth:`admit` counted has ended."""
        session = key.partition("/")[0]
        left = self._open.get(session, 0) - 1
        if left > 0:
            self._open[session] = left
        else:
            self._open.pop(session, None)
        self._total -= 1

    async def connect(
        self, addresses: list[str], port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The first of ``addresses`` (already checked) that answers at ``port``."""
        error: OSError = OSError(f"no address to connect to at port {port}")
        for address in addresses:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(address, port, limit=self.limits.buffer),
                    self.limits.dial_timeout,
                )
            except (OSError, TimeoutError) as exc:
                error = exc if isinstance(exc, OSError) else OSError(f"{address}:{port} timed out")
        raise error

    async def attach(
        self,
        key: str,
        policy: EgressPolicy,
        sockets: SessionSockets,
        interceptor: Interceptor | None = None,
    ) -> None:
        """Serve session ``key``'s ``sockets`` under ``policy`` until :meth:`detach`."""
        if key in self._sessions:
            raise ValueError(f"session {key} is attached already")
        dns = SessionDns(key, policy, self.resolver)
        chosen = interceptor if interceptor is not None else self.interceptor
        egress = SessionEgress(key, policy, sockets, chosen, dns, self)
        self._sessions[key] = egress
        try:
            await dns.start(sockets.dns_udp, sockets.dns_tcp)
            for kind, sock in (("transparent", sockets.transparent), ("proxy", sockets.proxy)):
                sock.setblocking(False)
                server = await asyncio.start_server(
                    functools.partial(egress.serve, kind), sock=sock, limit=self.limits.buffer
                )
                egress.servers.append(server)
        except BaseException:
            await self.detach(key)
            raise
        logger.info("egress of session %s: %s", key, policy.describe())

    async def detach(self, key: str) -> None:
        """Stop serving session ``key``: its sockets and open connections are closed."""
        egress = self._sessions.pop(key, None)
        if egress is None:
            return
        egress.closed = True
        for server in egress.servers:
            server.close()
        for writer in list(egress.writers):
            close_writer(writer)
        tasks = list(egress.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await egress.dns.aclose()
        egress.sockets.close()

    async def aclose(self) -> None:
        """Detach every session."""
        for key in list(self._sessions):
            await self.detach(key)
