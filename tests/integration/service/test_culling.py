"""Idle sessions are culled, and the client is told why."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from .server import TOKEN, Server, final_status, output, running_server


@pytest.fixture(scope="module")
def culling_server() -> Iterator[Server]:
    """``lmc serve`` that culls sessions idle for 2 s.

    Shared by the module's tests on purpose: each makes sessions of its own,
    and culling is the server's work across all of them.
    """
    with running_server("--pool-size", "0", "--idle-timeout", "2") as server:
        yield server


def test_a_long_execution_is_not_culled_mid_run(culling_server: Server) -> None:
    """Regression: idle means no execution in flight, however long it runs."""
    session_id = culling_server.create()
    code = "import time\nfor _ in range(3):\n    time.sleep(2)\nprint('survived')"
    try:
        messages = culling_server.execute(session_id, code)
        assert output(messages) == "survived\n", messages
        assert final_status(messages) == "ok"
        assert not any((m.get("extras") or {}).get("status") == "culled" for m in messages)
    finally:
        culling_server.delete(session_id)


def test_idle_session_is_culled_and_the_client_told_why(culling_server: Server) -> None:
    server = culling_server
    session_id = server.create()

    async def listen() -> tuple[list[dict[str, Any]], int | None, str | None]:
        frames: list[dict[str, Any]] = []
        url = f"{server.ws_url}/v1/sessions/{session_id}/ws?token={TOKEN}"
        async with connect(url) as ws:
            with anyio.fail_after(30):
                try:
                    while True:
                        frames.append(json.loads(await ws.recv()))
                except ConnectionClosed as closed:
                    rcvd = closed.rcvd
                    return frames, rcvd.code if rcvd else None, rcvd.reason if rcvd else None
        raise AssertionError("unreachable")

    frames, code, reason = anyio.run(listen)
    assert frames, "no message before the connection closed"
    notice = frames[-1]
    assert notice["extras"]["status"] == "culled"
    assert "idle for more than 2 s" in notice["content"]
    assert code == 1001 and reason is not None and "idle" in reason

    with server.client() as client:
        gone = client.get(f"/v1/sessions/{session_id}")
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "session_ended"
    assert "idle for more than 2 s" in gone.json()["error"]["message"]
    transcript = (server.data_dir / "threads" / session_id / "messages.jsonl").read_text()
    assert "culled" in transcript
