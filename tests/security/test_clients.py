"""Class 10: slow and idle clients cannot starve the service.

A connection that never finishes its headers, or drips its body, is closed
after a bounded time; past the connection cap the oldest idle connections
give way, so ``/healthz`` answers with 1,100 idle connections open against a
server whose file limit is 1024.
"""

from __future__ import annotations

import contextlib
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.service.server import TOKEN, Server

from .harness import Account, serve_as

#: Generous bounds on the server's header and body timeouts.
CLOSE_DEADLINE = 60.0


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    """The server under attack, shared by the module's tests on purpose: each test
    makes sessions of its own, and one server facing them all is the setting."""
    with serve_as(
        account,
        *("--pool-size", "1", "--max-sessions", "4"),
        # Short deadlines: the tests wait them out (the defaults are 10 s and 20 s).
        *("--header-timeout", "2", "--body-timeout", "3"),
    ) as running:
        yield running


def _connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def _closed_within(sock: socket.socket, deadline: float, drip: bytes = b"") -> bytes:
    """Everything the server sends until it closes ``sock``; fails at ``deadline``.

    With ``drip``, one byte of it is sent every second while the server waits.
    """
    received = b""
    sock.settimeout(1.0)
    while True:
        assert time.monotonic() < deadline, f"the server kept the connection open: {received!r}"
        if drip:
            with contextlib.suppress(OSError):
                sock.sendall(drip[:1])
            drip = drip[1:] or drip
        try:
            piece = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return received
        if not piece:
            return received
        received += piece


def _assert_timeout_reply(received: bytes) -> None:
    """A 408 with a JSON body, or nothing at all; never a 500."""
    if received:
        head = received.split(b"\r\n", 1)[0]
        assert head.startswith(b"HTTP/1.1 408"), received[:300]
        assert b'"request_timeout"' in received, received[:300]


def test_half_sent_headers_are_closed(server: Server) -> None:
    """Guards: a connection whose headers never end was kept forever."""
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        received = _closed_within(sock, time.monotonic() + CLOSE_DEADLINE)
    _assert_timeout_reply(received)


def test_headers_dripped_byte_by_byte_are_closed(server: Server) -> None:
    """Guards: the header timeout is a deadline, not reset by each byte (slowloris)."""
    with _connect(server) as sock:
        received = _closed_within(
            sock,
            time.monotonic() + CLOSE_DEADLINE,
            drip=b"GET /healthz HTTP/1.1\r\nX-A: " + b"a" * 200,
        )
    _assert_timeout_reply(received)


@pytest.mark.parametrize("drip", [False, True])
def test_slow_body_is_closed(server: Server, drip: bool) -> None:
    """Guards: an authenticated request whose body stalls, or trickles in a byte
    a second, held its connection and a request task forever."""
    head = (
        f"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
        "Content-Length: 100000\r\n\r\n{"
    )
    with _connect(server) as sock:
        sock.sendall(head.encode())
        received = _closed_within(
            sock, time.monotonic() + CLOSE_DEADLINE, drip=b" " * 1000 if drip else b""
        )
    _assert_timeout_reply(received)
    with server.client() as client:
        assert client.get("/v1/sessions").json()["sessions"] == []


def _open_idle(server: Server, count: int) -> list[socket.socket]:
    """``count`` connections: half send nothing, half stop in their headers."""
    sockets = []
    for index in range(count):
        sock = _connect(server)
        if index % 2:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sockets.append(sock)
    return sockets


@contextlib.contextmanager
def _file_limit_1024(account: Account) -> Iterator[Server]:
    """A server started with a file limit of 1024, soft and hard (``lmc serve``
    lifts a soft limit up to the hard one; a host can hold it at 1024)."""
    limit = ("prlimit", "--nofile=1024:1024", "--")
    with serve_as(account, "--pool-size", "1", "--max-sessions", "4", prefix=limit) as running:
        limits = Path(f"/proc/{running.process.pid}/limits").read_text()
        assert re.search(r"Max open files\s+1024\s+1024\s", limits), limits
        yield running


def test_healthz_answers_with_1100_idle_connections(account: Account) -> None:
    """Guards: with a file limit of 1024, 1,100 idle connections exhausted the
    server's descriptors and /healthz timed out; the service stays usable."""
    with _file_limit_1024(account) as server:
        _healthz_under_idle_load(server)


def _healthz_under_idle_load(server: Server) -> None:
    idle = _open_idle(server, 1100)
    try:
        latencies = []
        for _ in range(5):
            started = time.monotonic()
            response = httpx.get(server.url + "/healthz", timeout=10)
            latencies.append(time.monotonic() - started)
            assert response.status_code == 200, response.text
        print(f"/healthz with 1,100 idle connections: max {max(latencies):.3f} s")
        assert max(latencies) < 5, latencies
        session_id = server.create()
        replies = server.execute(session_id, "print(6 * 7)")
        assert any(m.get("content") == "42\n" for m in replies), replies
        server.delete(session_id)
    finally:
        for sock in idle:
            sock.close()
