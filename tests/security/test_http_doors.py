"""Slowloris against ``lmc mcp --http``: half-sent requests past the file limit.

Under a limit of 1,024 open files, 1,100 connections that never finish their
headers held every descriptor of a plain uvicorn: a client with the token got
no answer, and each refused ``accept()`` logged a traceback (50 MB in 10 s).
The MCP door now runs the hardened set-up ``lmc serve`` has: a deadline for
headers, a cap on connections (the longest-waiting one closed to make room),
and accept errors logged at most once a while.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.integration.mcp.client import REPO, server_env

pytestmark = pytest.mark.timeout(300)

TOKEN = "test-token-0123456789"
#: The server's limit on open files, and the half-open requests sent at it.
FILES, HALF_OPEN = 1024, 1100
#: How long the attack goes on, and the most the server may log meanwhile.
ATTACK_SECONDS, LOG_BYTES = 10.0, 64 << 10
#: A client with the token is answered within this, under attack.
ANSWER_WITHIN = 15.0


class _Door:
    """A running ``lmc mcp --http`` whose output (both streams) is counted."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.logged = 0
        self.head = bytearray()
        self.url = ""
        self._listening = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with contextlib.suppress(OSError, ValueError):
            while piece := self.process.stdout.read1(65536):  # type: ignore[attr-defined]
                self.logged += len(piece)
                if len(self.head) < 8192:
                    self.head += piece[:8192]
                if not self._listening.is_set():
                    for line in self.head.decode(errors="replace").splitlines():
                        if line.startswith("lmc mcp: listening on "):
                            self.url = line.split()[-1]
                            self._listening.set()

    def wait_listening(self) -> str:
        assert self._listening.wait(60), f"lmc mcp did not listen: {bytes(self.head)!r}"
        return self.url


@contextlib.contextmanager
def _mcp_door() -> Iterator[_Door]:
    argv = ["prlimit", f"--nofile={FILES}:{FILES}", "--"]
    argv += [sys.executable, "-m", "lmc_runtime", "mcp", "--http", "--port", "0"]
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        env=server_env(LMC_TOKEN=TOKEN),
    )
    door = _Door(process)
    try:
        yield door
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _half_open(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` connections, each with a request whose headers never end."""
    held = []
    for _ in range(count):
        sock = socket.socket()
        sock.settimeout(5)
        try:
            sock.connect((host, port))
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        except OSError:
            sock.close()
            continue
        held.append(sock)
    return held


def _initialize(url: str) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "attack-test", "version": "0"},
        },
    }
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
    }
    return httpx.post(url, json=body, headers=headers, timeout=ANSWER_WITHIN)


def test_half_open_requests_past_the_file_limit_leave_the_mcp_door_answering() -> None:
    """Guards against slowloris on ``lmc mcp --http``: plain uvicorn had no header
    deadline and no connection cap, so half-sent requests held every descriptor,
    the client with the token timed out, and EMFILE tracebacks flooded the log."""
    with _mcp_door() as door:
        url = door.wait_listening()
        split = urlsplit(url)
        assert split.hostname is not None and split.port is not None
        started = time.monotonic()
        held: list[socket.socket] = []
        try:
            held = _half_open(split.hostname, split.port, HALF_OPEN)
            before = door.logged
            answered = time.monotonic()
            response = _initialize(url)
            took = time.monotonic() - answered
            assert response.status_code == 200, response.text
            assert took < ANSWER_WITHIN
            # The attack goes on, more half-open requests coming, for a while.
            while time.monotonic() - started < ATTACK_SECONDS:
                held += _half_open(split.hostname, split.port, 50)
                time.sleep(0.5)
            assert _initialize(url).status_code == 200
        finally:
            for sock in held:
                sock.close()
        assert door.process.poll() is None, "lmc mcp --http ended"
        logged = door.logged - before
        assert logged < LOG_BYTES, f"{logged} bytes logged: {bytes(door.head[-2000:])!r}"


#: A server whose accepts fail for want of descriptors: asyncio, as uvicorn runs it,
#: with the hardened set-up's handler of accept errors.
_STARVED = """
import asyncio, logging, resource, socket, sys
from lmc_runtime.web.hardened import AcceptErrors

logging.basicConfig(level=logging.INFO)

async def main():
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(AcceptErrors(loop))
    sock = socket.create_server(("127.0.0.1", 0), backlog=512)
    held = []
    server = await loop.create_server(
        lambda: asyncio.Protocol(), sock=sock, backlog=128
    )
    import os
    used = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (used + 4, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    print(sock.getsockname()[1], flush=True)
    await asyncio.sleep(float(sys.argv[1]))
    server.close()

asyncio.run(main())
"""


def test_accepts_failing_for_want_of_descriptors_are_logged_once_a_while() -> None:
    """Guards the log: each accept() that failed with EMFILE logged a traceback,
    hundreds a second (Python 3.11 tries its whole accept batch), 50 MB in 10 s."""
    process = subprocess.Popen(
        [sys.executable, "-c", _STARVED, "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env=server_env(),
    )
    held: list[socket.socket] = []
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        for _ in range(100):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        _, err = process.communicate(timeout=60)
    finally:
        for sock in held:
            sock.close()
        if process.poll() is None:
            process.kill()
            process.wait(10)
    log = err.decode(errors="replace")
    assert log.count("cannot accept connections") == 1, log[-3000:]
    assert "Too many open files" in log and "Traceback" not in log, log[-3000:]
    assert len(err) < 4096, len(err)
