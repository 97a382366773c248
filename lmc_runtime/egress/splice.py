"""The plumbing of the gateway's connections: where a redirected connection was
going (``SO_ORIGINAL_DST``), the authority of a Host header or a proxy's target,
plain HTTP heads rewritten to end their connection, proxy replies, and the
splice that copies bytes both ways with bounded buffers and an idle timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import struct
from dataclasses import dataclass
from urllib.parse import urlsplit

from .sniff import HttpHead

__all__ = [
    "GatewayLimits",
    "Refused",
    "authority",
    "close_writer",
    "one_request_head",
    "origin_form",
    "original_destination",
    "proxy_reply",
    "splice",
]

#: ``SO_ORIGINAL_DST`` (linux/netfilter_ipv4.h); the same number at SOL_IPV6 is
#: ``IP6T_SO_ORIGINAL_DST``.
SO_ORIGINAL_DST = 80


class Refused(PermissionError):
    """A connection the policy refuses; ``reason`` says why (logged, and a
    proxy's client is answered ``status`` with it). A PermissionError, so that
    an interceptor's dial fails as any dial does."""

    def __init__(self, reason: str, status: int = 403) -> None:
        super().__init__(reason)
        self.reason, self.status = reason, status

    def with_status(self, status: int) -> Refused:
        self.status = status
        return self


@dataclass(frozen=True)
class GatewayLimits:
    """Seconds and sizes the gateway holds every connection to."""

    #: To send the first bytes (a ClientHello, a request head).
    head_timeout: float = 10.0
    #: To connect to an address.
    dial_timeout: float = 10.0
    #: Without a byte either way, before the connection is closed.
    idle_timeout: float = 300.0
    #: Connections at once, per session, all its processes' namespaces counted
    #: (more are closed at once).
    max_connections: int = 256
    #: Connections at once, every session's counted (more are closed at once):
    #: each takes two of the server's descriptors, or three with a secret's
    #: (the gateway takes at most an eighth of its open-file limit).
    max_total: int = 4096
    #: Bytes read at a time each way (the writer is drained between reads).
    buffer: int = 64 * 1024


def original_destination(sock: socket.socket) -> tuple[str, int]:
    """Where a connection redirected by the namespace's firewall was going.
    OSError if the socket was not redirected (or the kernel cannot say)."""
    if sock.family == socket.AF_INET6:
        raw = sock.getsockopt(socket.IPPROTO_IPV6, SO_ORIGINAL_DST, 28)
        port = struct.unpack_from("!H", raw, 2)[0]
        return str(ipaddress.IPv6Address(raw[8:24])), port
    raw = sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port = struct.unpack_from("!H", raw, 2)[0]
    return str(ipaddress.IPv4Address(raw[4:8])), port


def authority(text: str, default_port: int | None) -> tuple[str, int] | None:
    """``host[:port]`` or ``[v6][:port]`` as (host in lowercase, port); None if
    malformed or without a port where there is no default."""
    host, port_text = text.strip(), ""
    if host.startswith("["):
        inside, bracket, rest = host[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        host, port_text = inside, rest[1:]
    elif host.count(":") == 1:
        host, _, port_text = host.partition(":")
    elif ":" in host:
        return None
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return None
        return host.lower(), int(port_text)
    if default_port is None or not host:
        return None
    return host.lower(), default_port


_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "upgrade"}


def origin_form(target: str) -> str:
    """An absolute URI's path and query (``http://other.example/x`` is ``/x``);
    any other target as it is. A server routes a request with an absolute URI
    by the URI's host, whatever its ``Host`` (RFC 9112, 3.2.2), so the gateway,
    which checks the ``Host``, never forwards one."""
    if target.startswith("/") or "://" not in target:
        return target
    try:
        parts = urlsplit(target)
    except ValueError:  # a malformed authority ("http://[x/"): no path to keep
        return "/"
    if not parts.scheme:
        return target
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def one_request_head(head: HttpHead, target: str | None = None) -> bytes:
    """``head`` rewritten to be the connection's only request (``Connection:
    close``; ``target`` in place of its own, e.g. a proxy's absolute URI made
    origin-form, else its own in origin form): the next request, whatever its
    Host, needs a connection and a check of its own."""
    lines = [f"{head.method} {target or origin_form(head.target)} {head.version}"]
    lines += [f"{name}: {value}" for name, value in head.headers if name not in _HOP]
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def proxy_reply(status: int, reason: str) -> bytes:
    """A proxy's short reply: ``403`` with why, ``502`` when the dial failed..."""
    phrases = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway", 504: "Gateway Timeout"}
    body = (reason + "\n").encode("utf-8", "replace")
    head = (
        f"HTTP/1.1 {status} {phrases.get(status, 'Error')}\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def close_writer(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        writer.close()


async def splice(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    limits: GatewayLimits,
) -> None:
    """Copy bytes both ways until both sides end (an end is passed on as a
    half-close), either fails, or nothing moves for ``idle_timeout``; close both."""
    loop = asyncio.get_running_loop()
    last = [loop.time()]

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                data = await asyncio.wait_for(reader.read(limits.buffer), limits.idle_timeout)
            except TimeoutError:
                if loop.time() - last[0] >= limits.idle_timeout:
                    raise
                continue
            if not data:
                if writer.can_write_eof() and not writer.is_closing():
                    writer.write_eof()
                return
            last[0] = loop.time()
            writer.write(data)
            await asyncio.wait_for(writer.drain(), limits.idle_timeout)

    tasks = [
        loop.create_task(pump(client[0], upstream[1])),
        loop.create_task(pump(upstream[0], client[1])),
    ]
    try:
        # both ended, or one failed (then the other is cancelled)
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        close_writer(client[1])
        close_writer(upstream[1])
