"""The listening socket of a server (``lmc serve``, ``lmc mcp --http``), bound
before anything else starts so that a taken port is reported at once, and
the URL it is served at."""

from __future__ import annotations

import errno
import ipaddress
import socket

__all__ = ["ListenError", "is_loopback", "listen", "url_of"]


class ListenError(OSError):
    """The address cannot be listened on; the message says why, in one line."""


def listen(host: str, port: int, backlog: int | None = None) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (IPv4 or IPv6; ``::`` takes both
    where it can), listening with ``backlog`` (the system's default if None);
    :class:`ListenError` if it cannot be."""
    bare = host.strip("[]")
    try:
        infos = socket.getaddrinfo(bare, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family = infos[0][0]
        dual = family == socket.AF_INET6 and bare == "::" and socket.has_dualstack_ipv6()
        sock = socket.create_server(
            infos[0][4][:2], family=family, backlog=backlog, dualstack_ipv6=dual
        )
        # Inherited by every accepted connection (asyncio sets it only on sockets made
        # with IPPROTO_TCP, which create_server's are not): without it, a response's
        # second write waited for the client's delayed ACK, 40 ms per request.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            reason = "the address is already in use"
        elif isinstance(exc, socket.gaierror):
            reason = f"the host is not known ({exc.strerror})"
        else:
            reason = (exc.strerror or str(exc)).lower()
        raise ListenError(f"cannot listen on {host}:{port}: {reason}") from None


def url_of(sock: socket.socket) -> str:
    """``http://HOST:PORT`` of a bound socket (its real port)."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only loopback addresses (``localhost``, 127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    if host != "localhost":
        return False
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)
