"""``lmc mcp --http``: the token, a computer per MCP session, progress over HTTP."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

pytest.importorskip("mcp_types", reason="the [mcp] extra (mcp 2.x) is not installed")

from .client import INITIALIZE, HttpServer, http_client_of, process_gone, status, texts, wait_until
from .raw import headers, open_session

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_a_request_without_the_token_is_refused(server: HttpServer, token: str | None) -> None:
    response = httpx.post(server.url, json=INITIALIZE, headers=headers(token), timeout=30)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["code"] == "unauthorized"


def test_the_token_opens_a_session(server: HttpServer) -> None:
    with httpx.Client(headers=headers(), timeout=30) as http:
        assert open_session(http, server.url)["mcp-session-id"]


def test_each_session_has_a_computer_of_its_own(server: HttpServer) -> None:
    with http_client_of(server.url) as first, http_client_of(server.url) as second:
        said: list[str] = []
        result = first.call("execute", said.append, language="shell", code="X=41; echo $((X + 1))")
        assert status(result) == "ok" and "42" in texts(result)
        assert any("42" in message for message in said)  # progress notifications over HTTP
        assert "[unset]" in texts(second.execute('echo "[${X:-unset}]"', language="shell"))
        assert "[41]" in texts(first.execute('echo "[${X:-unset}]"', language="shell"))


def test_ending_the_session_closes_its_computer(server: HttpServer, tmp_path: Path) -> None:
    """Regression guard: a client that ends its MCP session (DELETE) must not leave
    its interpreters running on the server."""
    pidfile = tmp_path / "shell.pid"
    with http_client_of(server.url) as client:
        assert status(client.execute(f"echo $$ > {pidfile}", language="shell")) == "ok"
        shell = int(pidfile.read_text())
        assert not process_gone(shell)
    wait_until(lambda: process_gone(shell), 45, "the shell of the ended session is still running")
