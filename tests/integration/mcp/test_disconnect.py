"""A client that goes away in the middle of a run stops its code: over stdio the
server ends with everything it started, over HTTP the run is interrupted."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

pytest.importorskip("mcp_types", reason="the [mcp] extra (mcp 2.x) is not installed")

from .client import REPO, HttpServer, http_client_of, status, texts, wait_until

pytestmark = pytest.mark.integration


def _abandoning(where: str, language: str, code: str) -> subprocess.Popen[str]:
    """A client running ``code``; returns once its run has started."""
    client = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.mcp.abandon", where, language, code],
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


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_stdio_client_killed_mid_run_takes_the_server_and_the_code_with_it(
    tmp_path: Path,
) -> None:
    """Regression guard: the server must end when its client does, and the code
    with it, before the code gets to write its file."""
    pidfile, marker = tmp_path / "sleep.pid", tmp_path / "marker"
    code = f"sh -c 'echo $$ > {pidfile}; exec sleep 60' && touch {marker}"
    client = _abandoning("stdio", "shell", code)
    sleeper = _pid(pidfile)
    servers = psutil.Process(client.pid).children()
    assert servers, "the client has no server process"
    client.send_signal(signal.SIGKILL)
    client.wait(timeout=30)
    wait_until(lambda: all(_gone(s.pid) for s in servers), 45, "the server did not end")
    wait_until(lambda: _gone(sleeper), 45, "the code did not end")
    assert not marker.exists()


def test_an_http_client_killed_mid_run_has_its_code_interrupted(
    server: HttpServer, tmp_path: Path
) -> None:
    """Regression guard: a dropped connection must stop the call's code, not leave
    it running until its own end."""
    pidfile, marker = tmp_path / "sleep.pid", tmp_path / "marker"
    code = f"sh -c 'echo $$ > {pidfile}; exec sleep 60' && touch {marker}"
    client = _abandoning(server.url, "shell", code)
    sleeper = _pid(pidfile)
    client.send_signal(signal.SIGKILL)
    client.wait(timeout=30)
    wait_until(lambda: _gone(sleeper), 45, "the code was not stopped")
    assert not marker.exists()
    with http_client_of(server.url) as other:
        result = other.execute("echo still serving", language="shell")
        assert status(result) == "ok" and "still serving" in texts(result)
