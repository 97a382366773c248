"""MCP over HTTP by hand, with httpx: for tests of what the SDK's client hides
(a refused token, a connection that drops in the middle of a call)."""

from __future__ import annotations

import httpx

from .client import ACCEPT, INITIALIZE, TOKEN

__all__ = ["headers", "open_session"]


def headers(token: str | None = TOKEN) -> dict[str, str]:
    """What a streamable HTTP client sends with each request: its ``Accept``, and
    ``token`` as a bearer token unless it is None."""
    return {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}


def open_session(http: httpx.Client, url: str) -> dict[str, str]:
    """Open an MCP session at ``url`` (``initialize``, then ``initialized``); the
    headers that its requests carry."""
    opened = http.post(url, json=INITIALIZE)
    assert opened.status_code == 200, opened.text
    session = {"mcp-session-id": opened.headers["mcp-session-id"]}
    session["mcp-protocol-version"] = INITIALIZE["params"]["protocolVersion"]
    done = http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
    )
    assert done.status_code == 202, done.text
    return session
