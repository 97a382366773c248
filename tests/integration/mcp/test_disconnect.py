"""A client that goes away in the middle of a run stops its code: over stdio the
server ends with everything it started; over HTTP, where the client is a
connection that drops, the run is interrupted and the server serves on."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest

pytest.importorskip("mcp_types", reason="the [mcp] extra (mcp 2.x) is not installed")

from .client import REPO, HttpServer, http_client_of, process_gone, status, texts, wait_until
from .raw import headers, open_session

pytestmark = pytest.mark.integration


def _abandoning(language: str, code: str) -> subprocess.Popen[str]:
    """A client of a stdio server running ``code``; returns once its run has started."""
    client = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.mcp.abandon", language, code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
    )
    assert client.stdout is not None
    line = client.stdout.readline()  # bounded by the test's timeout
    assert line.strip() == "running", f"the client said {line!r}, status {client.poll()}"
    return client


def _pid(path: Path) -> int:
    wait_until(lambda: path.exists() and path.read_text().strip() != "", 60, "the pid file")
    return int(path.read_text())


def test_a_stdio_client_killed_mid_run_takes_the_server_and_the_code_with_it(
    tmp_path: Path,
) -> None:
    """Regression guard: the server must end when its client does, and the code
    with it, before the code gets to write its file."""
    pidfile, marker = tmp_path / "sleep.pid", tmp_path / "marker"
    code = f"sh -c 'echo $$ > {pidfile}; exec sleep 60' && touch {marker}"
    client = _abandoning("shell", code)
    sleeper = _pid(pidfile)
    servers = psutil.Process(client.pid).children()
    assert servers, "the client has no server process"
    client.send_signal(signal.SIGKILL)
    client.wait(timeout=30)
    wait_until(lambda: all(process_gone(s.pid) for s in servers), 45, "the server did not end")
    wait_until(lambda: process_gone(sleeper), 45, "the code did not end")
    assert not marker.exists()


def test_an_http_client_gone_mid_run_has_its_code_interrupted(
    server: HttpServer, tmp_path: Path
) -> None:
    """Regression guard: a dropped connection (no MCP cancellation, no DELETE) must
    stop the call's code, not leave it running until its own end."""
    pidfile, marker = tmp_path / "sleep.pid", tmp_path / "marker"
    code = f"sh -c 'echo $$ > {pidfile}; exec sleep 60' && touch {marker}"
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "execute",
            "arguments": {"language": "shell", "code": code},
            "_meta": {"progressToken": "run"},
        },
    }
    with httpx.Client(headers=headers(), timeout=60) as http:
        session = open_session(http, server.url)
        with http.stream("POST", server.url, json=call, headers=session) as response:
            assert response.status_code == 200
            sleeper = _pid(pidfile)
        # the stream is closed before the run ended: the connection is dropped
    wait_until(lambda: process_gone(sleeper), 45, "the code was not stopped")
    assert not marker.exists()
    with http_client_of(server.url) as other:
        result = other.execute("echo still serving", language="shell")
        assert status(result) == "ok" and "still serving" in texts(result)
