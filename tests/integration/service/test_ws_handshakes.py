"""Refused WebSocket handshakes: what the client gets, and what the log says."""

from __future__ import annotations

import time

import anyio
import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from .server import TOKEN, Server

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _wait_for_log(server: Server, since: int, texts: list[str]) -> str:
    """The server's log after offset ``since`` once it holds each of ``texts``
    (bounded)."""
    deadline = time.monotonic() + 30
    while True:
        log = server.log()[since:]
        if all(text in log for text in texts):
            return log
        assert time.monotonic() < deadline, f"{texts} never logged: {log[-2000:]}"
        time.sleep(0.05)


def test_refused_handshakes_log_nothing_at_error(server: Server) -> None:
    """Regression: every refused handshake (401, 403, 404: no token needed) logged
    "ERROR uvicorn.error: ASGI callable returned without completing handshake.",
    so anyone could fill the log with errors."""
    since = len(server.log())
    url = f"{server.ws_url}/v1/sessions/0000000000000000/ws"
    refusals: list[tuple[dict[str, str], int]] = [
        ({}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({**AUTH, "Origin": "http://evil.example"}, 403),
        (AUTH, 404),
    ]

    async def refuse() -> list[int]:
        statuses = []
        for headers, _ in refusals:
            with pytest.raises(InvalidStatus) as refused:
                async with connect(url, additional_headers=headers, open_timeout=30):
                    pass
            statuses.append(refused.value.response.status_code)
        return statuses

    assert anyio.run(refuse) == [status for _, status in refusals]
    # An access line for each, then one request after them all: by the time it is
    # logged, whatever the refusals logged (in the same step as their lines) is too.
    marker = "/healthz?after-refusals"
    assert httpx.get(server.url + marker, timeout=30).status_code == 200
    log = _wait_for_log(server, since, ['"WS /v1/sessions/0000000000000000/ws" 404', marker])
    assert log.count('"WS /v1/sessions/0000000000000000/ws"') == len(refusals), log
    assert " ERROR " not in log and "without completing handshake" not in log, log
