"""Class 13 (part): SIGTERM ends running streams with a final ``closed`` message.

Before, a graceful shutdown cut a running NDJSON stream (and a WebSocket
execution) with no final message: the client could not tell a finished run
from a broken connection.
"""

from __future__ import annotations

import contextlib
import json
import signal
from typing import Any

import anyio
import httpx
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.integration.service.server import CODE, TOKEN

from .harness import Account, serve_as

LONG_RUN = "import time\nprint('started', flush=True)\ntime.sleep(600)\nprint('finished')"


def _assert_closed_at_the_end(messages: list[dict[str, Any]], reply_to: str) -> None:
    assert messages, "no message at all"
    last = messages[-1]
    assert last["type"] == "console" and last["format"] == "active_line", last
    assert last["content"] is None, last
    assert (last.get("extras") or {}).get("status") == "closed", last
    assert last.get("in_reply_to") == reply_to, last
    assert not any(m.get("content") == "finished\n" for m in messages)


def test_sigterm_ends_a_running_ndjson_stream_with_closed(account: Account) -> None:
    """Guards: SIGTERM cut a running NDJSON stream with no final message."""
    with serve_as(account, "--pool-size", "0", "--max-sessions", "2") as server:
        session_id = server.create()
        messages: list[dict[str, Any]] = []
        with (
            server.client() as client,
            client.stream(
                "POST",
                f"/v1/sessions/{session_id}/execute",
                json={**CODE, "content": LONG_RUN, "id": "long-1"},
            ) as response,
        ):
            assert response.status_code == 200
            with contextlib.suppress(httpx.TransportError):
                for line in response.iter_lines():
                    if not line:
                        continue
                    messages.append(json.loads(line))
                    if messages[-1].get("content") == "started\n":
                        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=60) in (0, -signal.SIGTERM)
    assert any(m.get("content") == "started\n" for m in messages), messages
    _assert_closed_at_the_end(messages, "long-1")


def test_sigterm_ends_a_running_websocket_execution_with_closed(account: Account) -> None:
    """Guards: SIGTERM cut a running WebSocket execution with no final message."""
    with serve_as(account, "--pool-size", "0", "--max-sessions", "2") as server:
        session_id = server.create()

        async def scenario() -> list[dict[str, Any]]:
            messages: list[dict[str, Any]] = []
            url = f"{server.ws_url}/v1/sessions/{session_id}/ws?token={TOKEN}"
            with anyio.fail_after(90):
                async with connect(url) as ws:
                    await ws.send(json.dumps({**CODE, "content": LONG_RUN, "id": "long-2"}))
                    with contextlib.suppress(ConnectionClosed):
                        while True:
                            messages.append(json.loads(await ws.recv()))
                            if messages[-1].get("content") == "started\n":
                                server.process.send_signal(signal.SIGTERM)
                            last = messages[-1]
                            if last["format"] == "active_line" and last["content"] is None:
                                break
            return messages

        messages = anyio.run(scenario)
        assert server.process.wait(timeout=60) in (0, -signal.SIGTERM)
    assert any(m.get("content") == "started\n" for m in messages), messages
    _assert_closed_at_the_end(messages, "long-2")
