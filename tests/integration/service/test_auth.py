"""Authentication over HTTP and WebSocket, and the loopback rule for --no-auth."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from .server import TOKEN, Server, running_server


def test_http_without_token_is_401(server: Server) -> None:
    with server.client(token=None) as client:
        response = client.get("/v1/sessions")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert "missing" in response.json()["error"]["message"]


def test_http_with_wrong_token_is_401(server: Server) -> None:
    with server.client(token=TOKEN + "x") as client:
        response = client.post("/v1/sessions", json={})
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "invalid bearer token"


def test_healthz_and_openapi_need_no_token(server: Server) -> None:
    with server.client(token=None) as client:
        assert client.get("/healthz").json()["status"] == "ok"
        paths = client.get("/openapi.json").json()["paths"]
    assert "/v1/sessions/{session_id}/execute" in paths


def _ws_refusal(server: Server, session_id: str, query: str = "", **kwargs: object) -> int:
    async def attempt() -> int:
        try:
            url = f"{server.ws_url}/v1/sessions/{session_id}/ws{query}"
            async with connect(url, **kwargs):  # type: ignore[arg-type]
                return 101
        except InvalidStatus as exc:
            return exc.response.status_code

    return anyio.run(attempt)


def test_websocket_without_token_is_refused(server: Server) -> None:
    session_id = server.create()
    try:
        assert _ws_refusal(server, session_id) == 401
        assert (
            _ws_refusal(server, session_id, additional_headers={"Authorization": "Bearer no"})
            == 401
        )
        # The token in the query or in a subprotocol is accepted.
        assert _ws_refusal(server, session_id, f"?token={TOKEN}") == 101
        assert _ws_refusal(server, session_id, subprotocols=["lmc", f"lmc.token.{TOKEN}"]) == 101
    finally:
        server.delete(session_id)


def test_websocket_from_a_foreign_origin_is_refused(server: Server) -> None:
    session_id = server.create()
    try:
        headers = {"Authorization": f"Bearer {TOKEN}", "Origin": "https://evil.example"}
        assert _ws_refusal(server, session_id, additional_headers=headers) == 403
        same = {"Authorization": f"Bearer {TOKEN}", "Origin": f"http://127.0.0.1:{server.port}"}
        assert _ws_refusal(server, session_id, additional_headers=same) == 101
    finally:
        server.delete(session_id)


def test_no_auth_is_refused_on_a_non_loopback_host(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "serve", "--host", "0.0.0.0", "--no-auth"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--no-auth is only allowed on a loopback address" in result.stderr


def test_a_token_is_generated_and_printed_when_none_is_given(tmp_path: Path) -> None:
    with running_server("--pool-size", "0", token=None) as running:
        with running.client() as client:
            assert client.get("/v1/sessions").status_code == 401
        running.process.send_signal(signal.SIGTERM)
        running.process.wait(timeout=30)
        out = running.log(wait=30)
    line = next(line for line in out.splitlines() if "generated token" in line)
    token = line.rsplit(" ", 1)[1]
    assert len(token) >= 32
