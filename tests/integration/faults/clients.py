"""Clients that stream a run and stop where a fault test wants them to."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
from websockets.asyncio.client import ClientConnection

from ..service.server import CODE, TOKEN, Server

__all__ = ["body", "descendants_gone", "reply", "stream_until", "ws_url"]


def body(code: str, language: str = "python", **fields: Any) -> dict[str, Any]:
    """A code message of ``language``."""
    return {**CODE, "format": language, "content": code, **fields}


def ws_url(server: Server, session_id: str) -> str:
    return f"{server.ws_url}/v1/sessions/{session_id}/ws?token={TOKEN}"


async def reply(ws: ClientConnection, within: float = 30) -> dict[str, Any]:
    """The next frame (bounded: only a hang waits that long)."""
    with anyio.fail_after(within):
        return dict(json.loads(await ws.recv()))


def stream_until(
    client: httpx.Client, session_id: str, code: str, seen: str
) -> tuple[httpx.Response, Iterator[str]]:
    """Start ``code`` as a streamed execute and read it until ``seen`` was in its
    output; the open response (close it to disconnect) and the rest of its lines."""
    request = client.build_request(
        "POST", f"/v1/sessions/{session_id}/execute", json=body(code), timeout=60
    )
    response = client.send(request, stream=True)
    assert response.status_code == 200, response.read()
    lines = response.iter_lines()
    text = ""
    for line in lines:
        if line:
            text += str(json.loads(line).get("content") or "")
        if seen in text:
            return response, lines
    raise AssertionError(f"the stream ended before {seen!r}: {text!r}")


def descendants_gone(pids: list[int], within: float = 30) -> list[int]:
    """Wait (bounded) until none of ``pids`` runs; those still running then."""
    import psutil

    deadline = time.monotonic() + within
    while True:
        alive = [pid for pid in pids if psutil.pid_exists(pid) and not _zombie(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def _zombie(pid: int) -> bool:
    import psutil

    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True
