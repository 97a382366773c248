"""Attacks on what the E2B door streams and what is in flight when a sandbox
ends: a client that asks for a run's output and never reads it, and a kill
racing ``run_code`` and file transfers of the same sandbox."""

from __future__ import annotations

import concurrent.futures
import json
import secrets
import socket
import struct
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.integration.service.server import Server

from .e2b_door import (
    ENVD,
    INTERPRETER,
    create,
    door_server,
    kill,
    marked_pids,
    traffic,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)

#: Each run first leaves a process of its own, which carries the sandbox's mark
#: (its environment) on the host: a forked kernel's does not (its environment is
#: set after the fork), nor does anything above it.
LEAVE = "import subprocess\nsubprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
#: Code that writes far more than any buffer between it and the client holds.
FLOOD = LEAVE + "import sys\nfor _ in range(4000):\n    sys.stdout.write('x' * 65535 + '\\n')\n"
#: Code that runs a while, writing as it goes.
LONG = LEAVE + "import time\nfor i in range(400):\n    print(i, flush=True)\n    time.sleep(0.05)\n"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with door_server("--max-sessions", "4") as server:
        yield server


def _marked(server: Server) -> tuple[str, str]:
    mark = "lmc-attack-" + secrets.token_hex(8)
    return str(create(server, envVars={"MARK": mark})["sandboxID"]), mark


def _unread(
    server: Server, sandbox_id: str, port: int, path: str, kind: str, body: bytes
) -> socket.socket:
    """A request whose answer is never read (a small receive buffer)."""
    url = urlsplit(server.url)
    assert url.hostname is not None and url.port is not None
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((url.hostname, url.port))
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nE2b-Sandbox-Id: {sandbox_id}\r\n"
        f"E2b-Sandbox-Port: {port}\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    return sock


def _run_code_unread(server: Server, sandbox_id: str) -> socket.socket:
    """``run_code`` of code that floods its output."""
    body = json.dumps({"code": FLOOD}).encode()
    return _unread(server, sandbox_id, INTERPRETER, "/execute", "application/json", body)


def _command_unread(server: Server, sandbox_id: str) -> socket.socket:
    """envd's ``process.Process/Start`` of ``yes`` (a Connect server stream)."""
    start = {"process": {"cmd": "/bin/sh", "args": ["-c", "exec yes"]}}
    message = json.dumps(start).encode()
    body = struct.pack(">BI", 0, len(message)) + message
    return _unread(
        server, sandbox_id, ENVD, "/process.Process/Start", "application/connect+json", body
    )


def _quick(call: concurrent.futures.Future[int], seconds: float) -> int:
    return call.result(timeout=seconds)


@pytest.mark.parametrize("unread", [_run_code_unread, _command_unread], ids=["run_code", "command"])
def test_a_client_that_never_reads_blocks_nothing_else(
    server: Server, unread: Callable[[Server, str], socket.socket]
) -> None:
    """While output piles up unread, the server answers others, the sandbox can
    be killed at once, and nothing of it is left."""
    sandbox_id, mark = _marked(server)
    other = str(create(server)["sandboxID"])
    sock = unread(server, sandbox_id)
    try:
        wait_until(lambda: bool(marked_pids(mark)), 60, "the run starts")
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            assert _quick(pool.submit(lambda: traffic(server, other).status_code), 10) == 204
            health = pool.submit(lambda: httpx.get(server.url + "/healthz").status_code)
            assert _quick(health, 10) == 200
            started = time.monotonic()
            assert _quick(pool.submit(lambda: kill(server, sandbox_id).status_code), 30) == 204
            assert time.monotonic() - started < 15
        wait_until(lambda: not marked_pids(mark), 15, "the sandbox's processes end")
        assert traffic(server, sandbox_id, "/lmc-probe").status_code == 502
    finally:
        sock.close()
        kill(server, other)
    log = server.log()
    assert "Traceback" not in log, log[-3000:]


def _run(server: Server, sandbox_id: str) -> int:
    """``run_code``'s request, read to its end (a 200 whose stream may end early)."""
    with httpx.stream(
        "POST",
        server.url + "/execute",
        json={"code": LONG},
        headers={"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": str(INTERPRETER)},
        timeout=60,
    ) as response:
        try:
            for _ in response.iter_bytes():
                pass
        except httpx.RemoteProtocolError:  # the stream cut when its sandbox ended
            pass
        return response.status_code


def _upload(server: Server, sandbox_id: str, n: int) -> int:
    return traffic(
        server,
        sandbox_id,
        "/files",
        method="POST",
        params={"path": f"/home/user/race-{n}.bin"},
        files={"file": (f"race-{n}.bin", b"y" * (256 << 10))},
    ).status_code


def _download(server: Server, sandbox_id: str, n: int) -> int:
    return traffic(
        server, sandbox_id, "/files", params={"path": f"/home/user/race-{n % 4}.bin"}
    ).status_code


def test_a_kill_racing_run_code_and_files_never_500s_nor_hangs(server: Server) -> None:
    sandbox_id, mark = _marked(server)
    for n in range(4):
        assert _upload(server, sandbox_id, n) == 200
    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        runs = [pool.submit(_run, server, sandbox_id) for _ in range(3)]
        wait_until(lambda: bool(marked_pids(mark)), 60, "the runs start")
        transfers = [pool.submit(_upload, server, sandbox_id, n) for n in range(8)]
        transfers += [pool.submit(_download, server, sandbox_id, n) for n in range(8)]
        kills = [pool.submit(lambda: kill(server, sandbox_id).status_code) for _ in range(2)]
        transfers += [pool.submit(_upload, server, sandbox_id, n) for n in range(8, 12)]
        statuses = [f.result(timeout=60) for f in (*runs, *transfers)]
        killed = sorted(f.result(timeout=60) for f in kills)
    assert killed in ([204, 204], [204, 404]), killed
    assert 500 not in statuses, statuses
    assert set(statuses) <= {200, 400, 404, 502}, statuses
    wait_until(lambda: not marked_pids(mark), 15, "the sandbox's processes end")
    log = server.log()
    assert "Traceback" not in log, log[-3000:]
