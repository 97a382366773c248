"""Slowloris variants and log floods against the shared hardened HTTP set-up of
``lmc serve`` and ``lmc mcp --http``: bodies that never end and keep-alive
connections left idle after a request with the token, past a file limit of
1,024; malformed requests by the hundred, which must not flood the log."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.integration.service.server import TOKEN, Server

from .harness import ROOT, serve_as
from .test_http_doors import ANSWER_WITHIN, _initialize, _mcp_door

pytestmark = pytest.mark.timeout(300)

#: Connections sent at a server whose file limit is 1,024.
CONNECTIONS = 1100


def _connections(host: str, port: int, request: bytes, count: int) -> list[socket.socket]:
    """``count`` connections that each sent ``request`` (and read what came back)."""
    held = []
    for _ in range(count):
        sock = socket.socket()
        sock.settimeout(5)
        try:
            sock.connect((host, port))
            sock.sendall(request)
        except OSError:
            sock.close()
            continue
        held.append(sock)
    return held


def _slow_body(path: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"
    ).encode()


def _kept_alive(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()


@contextlib.contextmanager
def _server_at_1024() -> Iterator[Server]:
    limit = ("prlimit", "--nofile=1024:1024", "--")
    with serve_as(ROOT, "--pool-size", "0", "--max-sessions", "2", prefix=limit) as running:
        yield running


@pytest.mark.parametrize("kind", ["slow-body", "kept-alive"])
def test_serve_answers_past_1100_token_holding_connections(kind: str) -> None:
    """1,100 connections with the token, each a body that never ends or a finished
    request left idle on keep-alive, leave lmc serve answering /healthz and a run."""
    with _server_at_1024() as server:
        request = _slow_body("/v1/sessions") if kind == "slow-body" else _kept_alive("/v1/sessions")
        held = _connections("127.0.0.1", server.port, request, CONNECTIONS)
        try:
            assert len(held) > 1024 - 100, len(held)
            answer = httpx.get(server.url + "/healthz", timeout=ANSWER_WITHIN)
            assert answer.status_code == 200, answer.text
            sid = server.create()
            assert any(m.get("content") == "42\n" for m in server.execute(sid, "print(6 * 7)"))
            server.delete(sid)
            assert "Traceback" not in server.log(), server.log()[-2000:]
        finally:
            for sock in held:
                sock.close()


@pytest.mark.parametrize("kind", ["slow-body", "kept-alive"])
def test_mcp_door_answers_past_1100_token_holding_connections(kind: str) -> None:
    """The same against lmc mcp --http: a client with the token is answered, and
    the door logs no traceback."""
    with _mcp_door() as door:
        url = door.wait_listening()
        parts = urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        request = _slow_body(parts.path) if kind == "slow-body" else _kept_alive(parts.path)
        held = _connections(parts.hostname, parts.port, request, CONNECTIONS)
        try:
            started = time.monotonic()
            answer = _initialize(url)
            assert answer.status_code == 200, (answer.status_code, answer.text[:300])
            assert time.monotonic() - started < ANSWER_WITHIN
            assert b"Traceback" not in bytes(door.head), bytes(door.head)[-2000:]
        finally:
            for sock in held:
                sock.close()


def test_malformed_requests_are_logged_a_line_at_most_each() -> None:
    """Hundreds of malformed requests (garbage, bad chunking) log a short line each
    at most, never a traceback: no one without the token amplifies the log."""
    with serve_as(ROOT, "--pool-size", "0") as server:
        before = len(server.log(wait=1))
        requests = [
            b"GARBAGE\r\n\r\n",
            b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
        ]
        for request in requests * 100:
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
                sock.sendall(request)
                with contextlib.suppress(OSError):
                    sock.recv(4096)
    # Stopped (SIGTERM, as serve_as ends): its output is whole once its pipes have ended.
    logged = server.log()[before:]
    assert "Traceback" not in logged, logged[:2000]
    assert len(logged) <= 300 * 200, len(logged)
