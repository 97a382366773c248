"""The seams between the sandbox, the gateway and what intercepts a connection.

The sandbox side makes a session's listening sockets inside the session's own
network namespace (where every outgoing TCP connection is redirected to
``transparent`` and every DNS query reaches ``dns_udp`` or ``dns_tcp``) and
hands them to the server as :class:`SessionSockets`. The gateway serves them
under the session's policy. An :class:`Interceptor` (the secrets broker) may
take over an allowed connection to a name it cares about.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Dial", "Interceptor", "SessionSockets"]

#: Opens the gateway's own, already checked, connection to ``(name, port)``:
#: the gateway resolves the name and refuses the addresses it must.
Dial = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


@dataclass
class SessionSockets:
    """A session's listening sockets, made in its network namespace.

    ``transparent``: TCP, where the namespace's firewall redirects every outgoing
    TCP connection (``SO_ORIGINAL_DST`` gives where it was going).
    ``proxy``: TCP, an explicit HTTP proxy (``CONNECT`` and absolute URIs), named
    by ``HTTP_PROXY`` and ``HTTPS_PROXY`` inside the sandbox.
    ``dns_udp``, ``dns_tcp``: the namespace's resolver (its ``resolv.conf``).
    The gateway owns and closes them.
    """

    transparent: socket.socket
    proxy: socket.socket
    dns_udp: socket.socket
    dns_tcp: socket.socket

    def close(self) -> None:
        for sock in (self.transparent, self.proxy, self.dns_udp, self.dns_tcp):
            sock.close()


class Interceptor(Protocol):
    """Takes over allowed connections to some names (TLS terminated by the server)."""

    def wants(self, session: str, name: str, port: int) -> bool:
        """Whether the connection of ``session`` to ``name:port`` is this one's."""
        ...

    async def serve(
        self,
        session: str,
        name: str,
        port: int,
        head: bytes,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        dial: Dial,
    ) -> None:
        """Serve the client's connection until either side ends; close both.
        ``head`` is what the gateway already read from it (a TLS ClientHello or
        an HTTP request head; after an explicit proxy's ``CONNECT``, the
        tunnel's first bytes, whose SNI the gateway checked); the rest is
        unread. ``dial`` raises OSError (PermissionError when the policy
        refuses every address of the name)."""
        ...
