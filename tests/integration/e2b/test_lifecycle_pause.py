"""Pausing and resuming through E2B's SDK: a paused sandbox's processes stand
still (a thread of its kernel stops writing), its traffic is refused, the lmc
API's runs in its session are refused as busy, its timeout does not run;
connect resumes it where it stood. ``autoPause`` pauses it when its timeout
runs out, and ``autoResume`` lets its traffic resume it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from e2b import Sandbox, SandboxState

from tests.integration.e2b.conftest import E2B_TOKEN
from tests.integration.service.server import CODE, Server

pytestmark = pytest.mark.timeout(240)

#: A thread in the sandbox's Python kernel that appends to a file ten times a second.
TICKER = """
import threading, time
def _tick():
    while True:
        with open("ticks", "a") as f:
            f.write("t")
        time.sleep(0.1)
threading.Thread(target=_tick, daemon=True).start()
"""


def _session_of(server: Server, before: set[str]) -> str:
    """The lmc session the E2B sandbox made just now is."""
    with server.client(E2B_TOKEN) as client:
        ids = {s["id"] for s in client.get("/v1/sessions").json()["sessions"]}
    (made,) = ids - before
    return str(made)


def _sessions(server: Server) -> set[str]:
    with server.client(E2B_TOKEN) as client:
        return {s["id"] for s in client.get("/v1/sessions").json()["sessions"]}


def _wait(condition: Callable[[], bool], what: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen in {seconds:g} s"
        time.sleep(0.05)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _envd_health(server: Server, sandbox_id: str, token: str | None = None) -> int:
    headers = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": "49983"}
    if token is not None:
        headers["X-Access-Token"] = token
    return httpx.get(server.url + "/health", headers=headers, timeout=30).status_code


def test_a_paused_sandbox_stands_still_and_connect_resumes_it(e2b_env: Server) -> None:
    before = _sessions(e2b_env)
    sbx = Sandbox.create(timeout=120)
    try:
        session = _session_of(e2b_env, before)
        body = {**CODE, "content": TICKER}
        with e2b_env.client(E2B_TOKEN) as client:
            ran = client.post(f"/v1/sessions/{session}/execute", json=body)
        assert ran.status_code == 200, ran.text
        ticks = e2b_env.data_dir / "sessions" / session / "disk" / "work" / "ticks"
        _wait(lambda: _size(ticks) >= 3, "ticking")

        sbx.pause()
        assert sbx.get_info().state == SandboxState.PAUSED
        assert _envd_health(e2b_env, sbx.sandbox_id) == 502
        stood = _size(ticks)
        # Ten ticks a second while it ran: over a second, none now.
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            assert _size(ticks) <= stood + 1, "the paused sandbox's thread went on writing"
            time.sleep(0.1)
        stood = _size(ticks)
        # The lmc API's runs in its session are refused at once, not left waiting.
        started = time.monotonic()
        with e2b_env.client(E2B_TOKEN) as client:
            busy = client.post(f"/v1/sessions/{session}/execute", json={**CODE, "content": "1"})
        assert busy.status_code == 409, busy.text
        assert time.monotonic() - started < 10

        resumed = Sandbox.connect(sbx.sandbox_id, timeout=60)
        assert resumed.get_info().state == SandboxState.RUNNING
        left = resumed.get_info().end_at.timestamp() - time.time()
        assert 50 < left <= 61, "resuming sets the timeout it was given"
        _wait(lambda: _size(ticks) >= stood + 3, "ticking again after resume")
        with e2b_env.client(E2B_TOKEN) as client:
            ran = client.post(f"/v1/sessions/{session}/execute", json={**CODE, "content": "1"})
        assert ran.status_code == 200, ran.text
        assert _envd_health(e2b_env, sbx.sandbox_id) in (200, 204)
    finally:
        sbx.kill()


def test_pausing_twice_and_resuming_a_running_one_say_so(e2b_env: Server) -> None:
    sbx = Sandbox.create(timeout=60)
    try:
        headers = {"X-API-Key": E2B_TOKEN}
        with httpx.Client(base_url=e2b_env.url, headers=headers, timeout=30) as client:
            path = f"/sandboxes/{sbx.sandbox_id}"
            assert client.post(path + "/resume", json={"timeout": 30}).status_code == 409
            assert client.post(path + "/pause").status_code == 204
            again = client.post(path + "/pause")
            assert again.status_code == 409 and again.json()["code"] == 409
            resumed = client.post(path + "/resume", json={"timeout": 30})
            assert resumed.status_code == 201, resumed.text
            assert resumed.json()["sandboxID"] == sbx.sandbox_id
    finally:
        sbx.kill()


def test_a_paused_sandboxs_timeout_does_not_run(e2b_env: Server) -> None:
    sbx = Sandbox.create(timeout=3)
    try:
        sbx.pause()
        # Past its timeout, it is still there, paused.
        deadline = time.monotonic() + 4.5
        while time.monotonic() < deadline:
            assert sbx.get_info().state == SandboxState.PAUSED
            time.sleep(0.5)
        Sandbox.connect(sbx.sandbox_id, timeout=60)
        assert sbx.get_info().state == SandboxState.RUNNING
    finally:
        sbx.kill()


def test_auto_pause_pauses_at_the_timeout_and_auto_resume_wakes_it(e2b_env: Server) -> None:
    sbx = Sandbox.create(timeout=2, lifecycle={"on_timeout": "pause", "auto_resume": True})
    try:
        info = sbx.get_info()
        assert info.lifecycle is not None and info.lifecycle["on_timeout"] == "pause"
        _wait(lambda: sbx.get_info().state == SandboxState.PAUSED, "the pause at the timeout")
        # Its own traffic resumes it, with the timeout it was made with; only
        # traffic that carries its access token (the SDK's sandboxes are secure).
        assert _envd_health(e2b_env, sbx.sandbox_id) == 502
        assert sbx.get_info().state == SandboxState.PAUSED
        token = sbx._envd_access_token
        assert _envd_health(e2b_env, sbx.sandbox_id, token) in (200, 204)
        assert sbx.get_info().state == SandboxState.RUNNING
    finally:
        sbx.kill()


def test_without_auto_resume_traffic_to_a_paused_sandbox_is_refused(e2b_env: Server) -> None:
    sbx = Sandbox.create(timeout=2, lifecycle={"on_timeout": "pause"})
    try:
        _wait(lambda: sbx.get_info().state == SandboxState.PAUSED, "the pause at the timeout")
        assert _envd_health(e2b_env, sbx.sandbox_id) == 502
        assert sbx.get_info().state == SandboxState.PAUSED
    finally:
        sbx.kill()


def test_a_paused_sandbox_is_killed_whole(e2b_env: Server) -> None:
    before = _sessions(e2b_env)
    sbx = Sandbox.create(timeout=60)
    session = _session_of(e2b_env, before)
    sbx.pause()
    assert sbx.kill()
    with e2b_env.client(E2B_TOKEN) as client:
        answer = client.get(f"/v1/sessions/{session}")
    assert answer.status_code in (404, 410), answer.text
    assert sbx.sandbox_id not in {s.sandbox_id for s in Sandbox.list().next_items()}
