"""Idle sessions are culled, and the client is told why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from .server import TOKEN, running_server


def test_idle_session_is_culled_and_the_client_told_why(tmp_path: Path) -> None:
    with running_server("--pool-size", "0", "--idle-timeout", "2") as server:
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
