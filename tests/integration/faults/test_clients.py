"""Clients that fail mid-stream: one that disconnects, one that stops reading.

A WebSocket client that disconnects mid-run is
``tests/integration/service/test_ws_abuse.py::test_disconnect_mid_stream_interrupts_the_code_and_frees_the_session``;
here the same over the NDJSON stream, in Python and in the shell, and a
client that never reads a large stream.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import time
from collections.abc import Iterator

import psutil
import pytest

from ..service.server import TOKEN, Server, final_status, output, running_server
from .clients import body

MIB = 1 << 20

logger = logging.getLogger(__name__)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """Shared by the module: each test makes sessions of its own. No output budget,
    so that a large stream reaches the client whole."""
    args = ("--pool-size", "0", "--max-sessions", "4", "--output-bytes", "1G")
    with running_server(*args) as running:
        yield running


def _wait_idle(server: Server, session_id: str) -> None:
    deadline = time.monotonic() + 30
    with server.client() as client:
        while client.get(f"/v1/sessions/{session_id}").json()["state"] != "idle":
            assert time.monotonic() < deadline, "the session stayed busy after the client left"
            time.sleep(0.05)


CASES = {
    "python": (
        "state = 'running'\nprint('started', flush=True)\nimport time\ntime.sleep(300)\n"
        "state = 'finished'",
        "print(state)",
    ),
    "shell": ("state=running; echo started; sleep 300; state=finished", "echo $state"),
}


@pytest.mark.parametrize("language", list(CASES))
def test_a_client_that_disconnects_mid_stream_stops_the_code_and_keeps_the_state(
    server: Server, language: str
) -> None:
    code, show = CASES[language]
    sid = server.create(languages=[language])
    with server.client() as client:
        request = client.build_request(
            "POST", f"/v1/sessions/{sid}/execute", json=body(code, language), timeout=60
        )
        response = client.send(request, stream=True)
        assert response.status_code == 200
        for line in response.iter_lines():
            if line and json.loads(line).get("content") == "started\n":
                break
        response.close()  # the client goes away mid-run
    _wait_idle(server, sid)
    after = server.execute(sid, show, language=language)
    # Stopped, not left to finish its sleep; the state before the stop is kept.
    assert output(after) == "running\n" and final_status(after) == "ok", after
    server.delete(sid)


def _opening(server: Server, session_id: str, code: str, transport: str) -> tuple[bytes, bytes]:
    """What a raw client sends to run ``code`` in the shell over ``transport``: the
    request, and what goes once it is answered (a WebSocket's frame)."""
    payload = json.dumps(body(code, "shell")).encode()
    host = f"Host: 127.0.0.1:{server.port}\r\n"
    if transport == "http":
        head = (
            f"POST /v1/sessions/{session_id}/execute HTTP/1.1\r\n{host}"
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        return head.encode() + payload, b""
    key = base64.b64encode(os.urandom(16)).decode()
    head = (
        f"GET /v1/sessions/{session_id}/ws?token={TOKEN} HTTP/1.1\r\n{host}"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    # One masked text frame (a client's frames are masked), its length in 16 bits.
    assert len(payload) < 1 << 16
    mask = os.urandom(4)
    masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
    frame = bytes([0x81, 0x80 | 126]) + len(payload).to_bytes(2, "big") + mask + masked
    return head.encode(), frame


def _read(sock: socket.socket, at_least: int) -> bytes:
    """Read ``sock`` until ``at_least`` more bytes came (bounded by its timeout)."""
    sock.settimeout(60)
    got = bytearray()
    while len(got) < at_least:
        piece = sock.recv(1 << 20)
        assert piece, "the stream ended"
        got += piece
    return bytes(got)


#: 200 MiB of output, in 1 KiB lines.
FLOOD = "yes \"$(printf 'x%.0s' $(seq 1023))\" | head -c 209715200; echo; echo flood-done"


@pytest.mark.parametrize("transport", ["http", "websocket"])
def test_a_client_that_never_reads_a_large_stream_holds_the_server_to_bounded_memory(
    server: Server, transport: str
) -> None:
    """Guards against buffering a stream its client does not read: the server's
    memory would grow by what the code prints (here 200 MiB). The stream goes on
    once it is read, and a client that then leaves frees the session."""
    sid = server.create(languages=["shell"])
    process = psutil.Process(server.process.pid)
    before = process.memory_info().rss
    peak = before
    with socket.create_connection(("127.0.0.1", server.port)) as stalled:
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        request, then = _opening(server, sid, FLOOD, transport)
        stalled.sendall(request)
        answer = stalled.recv(4096)
        assert answer.startswith((b"HTTP/1.1 200", b"HTTP/1.1 101")), answer
        stalled.sendall(then)
        # The code writes until the stream's buffers are full, then waits; the
        # server's memory is sampled while it does.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            peak = max(peak, process.memory_info().rss)
            time.sleep(0.2)
        with server.client() as client:
            assert client.get(f"/v1/sessions/{sid}").json()["state"] == "busy"
        grown = (peak - before) / MIB
        assert grown < 100, f"the server grew by {grown:.0f} MiB for a client that did not read"
        # Read now: the stream goes on, line after line of the flood.
        data = _read(stalled, 16 * MIB)
        assert data.count(b'"format": "output"') > 100 and data.count(b"x" * 1023) > 10_000
    logger.info("%s: server RSS grew by %.1f MiB while the client did not read", transport, grown)
    _wait_idle(server, sid)  # the client left mid-run: the code is stopped
    after = server.execute(sid, "echo still here", language="shell")
    assert output(after) == "still here\n" and final_status(after) == "ok", after
    server.delete(sid)
