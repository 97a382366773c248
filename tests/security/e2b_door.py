"""What the attacks on the E2B door share: a real ``lmc serve`` with its E2B
door, raw clients of its control plane and sandbox traffic, and the host's
view of a sandbox's processes."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.integration.service.server import Server, running_server

__all__ = [
    "DOMAIN",
    "ENVD",
    "INTERPRETER",
    "KEY",
    "create",
    "door_server",
    "kill",
    "marked_pids",
    "raw_request",
    "traffic",
    "wait_until",
]

#: The server's token, in the shape E2B's SDKs check a key for.
KEY = "e2b_" + "0123456789abcdef" * 2 + "01234567"
#: The domain sandboxes are named under (``<port>-<id>.<domain>``).
DOMAIN = "e2b.test"
ENVD, INTERPRETER = 49983, 49999


@contextmanager
def door_server(*args: str, token: str | None = KEY) -> Iterator[Server]:
    """``lmc serve`` with its E2B door (no pool: each sandbox is a new session)."""
    with running_server("--pool-size", "0", "--e2b-domain", DOMAIN, *args, token=token) as server:
        yield server


def create(server: Server, *, key: str | None = KEY, **body: Any) -> dict[str, Any]:
    """A new sandbox through the control plane; its ``Sandbox`` body."""
    headers = {"X-API-Key": key} if key else {}
    body = {"templateID": "base", "timeout": 120, **body}
    response = httpx.post(server.url + "/sandboxes", json=body, headers=headers, timeout=120)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def kill(server: Server, sandbox_id: str, *, key: str | None = KEY) -> httpx.Response:
    headers = {"X-API-Key": key} if key else {}
    return httpx.delete(f"{server.url}/sandboxes/{sandbox_id}", headers=headers, timeout=60)


def traffic(
    server: Server,
    sandbox_id: str,
    path: str = "/health",
    *,
    port: int | str = ENVD,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    **kwargs: Any,
) -> httpx.Response:
    """Sandbox traffic as the SDKs send it with ``E2B_SANDBOX_URL``."""
    sent = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": str(port), **(headers or {})}
    return httpx.request(method, server.url + path, headers=sent, timeout=60, **kwargs)


def raw_request(server: Server, head: bytes, body: bytes = b"", *, wait: float = 30) -> bytes:
    """Send ``head`` (the request line and headers, CRLF-ended, without the blank
    line) and ``body`` as they are; the answer, up to its end or ``wait`` seconds."""
    host, port = urlsplit(server.url).hostname, urlsplit(server.url).port
    assert host is not None and port is not None
    with socket.create_connection((host, port), timeout=wait) as sock:
        sock.sendall(head + b"Connection: close\r\n\r\n" + body)
        answer = bytearray()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                piece = sock.recv(65536)
            except TimeoutError:
                break
            if not piece:
                break
            answer += piece
        return bytes(answer)


def status_of(answer: bytes) -> int:
    """The status of a raw HTTP answer (0 if there was none)."""
    line = answer.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) > 1 and line[1].isdigit() else 0


def marked_pids(mark: str) -> list[int]:
    """Host processes whose environment holds ``mark`` (a sandbox's envVars)."""
    needle = mark.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def wait_until(check: Any, seconds: float, what: str) -> None:
    """Wait, polling ``check()`` (a state of the host, no output), until it is true."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.1)
