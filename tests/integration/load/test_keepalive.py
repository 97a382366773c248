"""Regression: lmc serve keeps an idle connection open longer than httpx keeps one.

Under the 50-session load one execution in about ten thousand failed with
``ReadError``: the server closed idle keep-alive connections after 5 s, the
moment httpx (the load tool's client, and RemoteComputer's) still reused them
(its keep-alive expiry is 5 s too). A connection left idle a little past
httpx's expiry must still serve the next request.
"""

from __future__ import annotations

import select
import socket

import httpx

from ..service.server import running_server

#: How long httpx keeps an idle connection for reuse, by default.
HTTPX_EXPIRY = httpx.Limits().keepalive_expiry or 5.0
REQUEST = b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n"


def _response(sock: socket.socket) -> bytes:
    """One whole response (its headers and its Content-Length of body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        assert piece, f"the server closed the connection: {data!r}"
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        piece = sock.recv(65536)
        assert piece, "the server closed the connection mid-body"
        body += piece
    return head


def test_an_idle_connection_still_serves_after_httpx_would_reuse_it() -> None:
    with running_server("--pool-size", "0") as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            sock.sendall(REQUEST)
            assert _response(sock).startswith(b"HTTP/1.1 200")
            # Readable here would mean closed (nothing else is coming).
            closed, _, _ = select.select([sock], [], [], HTTPX_EXPIRY + 0.5)
            assert not closed, "the server closed an idle connection httpx would still reuse"
            sock.sendall(REQUEST)
            assert _response(sock).startswith(b"HTTP/1.1 200")
