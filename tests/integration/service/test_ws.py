"""The WebSocket: streaming a plot, chunk framing, malformed input, a run's timeout."""

from __future__ import annotations

import json
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect

from lmc_runtime.adapters.chunks import from_chunks

from .server import CODE, TOKEN, Server

PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\nprint('plotted')"


async def _until_done(ws: ClientConnection, chunks: bool = False) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    with anyio.fail_after(60):
        while True:
            frame = json.loads(await ws.recv())
            frames.append(frame)
            if chunks and frame.get("end") and frame["format"] == "active_line":
                return frames
            if not chunks and frame["format"] == "active_line" and frame["content"] is None:
                return frames


def test_websocket_streams_a_plot(server: Server) -> None:
    session_id = server.create()

    async def scenario() -> list[dict[str, Any]]:
        url = f"{server.ws_url}/v1/sessions/{session_id}/ws"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with connect(url, additional_headers=headers, max_size=None) as ws:
            await ws.send(json.dumps({**CODE, "content": PLOT, "id": "plot-1"}))
            return await _until_done(ws)

    try:
        messages = anyio.run(scenario)
    finally:
        server.delete(session_id)
    images = [m for m in messages if m["type"] == "image"]
    assert images and images[0]["format"] == "base64.png"
    assert images[0]["content"].startswith("iVBORw0KGgo")  # PNG signature, base64
    assert images[0]["in_reply_to"] == "plot-1"
    assert any(m.get("content") == "plotted\n" for m in messages)


def test_websocket_chunk_framing_and_malformed_messages(server: Server) -> None:
    session_id = server.create()

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        url = f"{server.ws_url}/v1/sessions/{session_id}/ws?token={TOKEN}"
        async with connect(url) as ws:
            await ws.send("this is not json")
            bad = json.loads(await ws.recv())
            await ws.send(json.dumps({"role": "assistant", "type": "code", "content": "1"}))
            worse = json.loads(await ws.recv())
            await ws.send(json.dumps({"hello": {"chunks": True}}))
            # Chunked input is understood too.
            header = {"role": "assistant", "type": "code", "format": "python"}
            await ws.send(json.dumps({**header, "start": True, "id": "c-1"}))
            await ws.send(json.dumps({**header, "content": "print("}))
            await ws.send(json.dumps({**header, "content": "'chunked')"}))
            await ws.send(json.dumps({**header, "end": True}))
            frames = await _until_done(ws, chunks=True)
            return [bad, worse], frames

    try:
        errors, frames = anyio.run(scenario)
    finally:
        server.delete(session_id)
    assert errors[0]["content"].startswith("[lmc] not understood: not JSON")
    assert errors[0]["extras"]["status"] == "malformed"
    assert errors[1]["extras"]["status"] == "malformed"
    assert frames[0]["start"] is True
    messages = list(from_chunks(frames))
    assert all(m.in_reply_to == "c-1" for m in messages)
    assert any(m.content == "chunked\n" for m in messages)


def test_a_code_message_carries_its_timeout(server: Server) -> None:
    """Guards: WebSocket runs had no server-side timeout; ``extras.timeout`` is
    the run's, so it ends "timeout"; a timeout that is not a positive number is
    refused as malformed, and the connection stays usable."""
    session_id = server.create()
    sleeper = {**CODE, "content": "import time\ntime.sleep(60)"}

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        url = f"{server.ws_url}/v1/sessions/{session_id}/ws?token={TOKEN}"
        async with connect(url) as ws:
            refused = []
            for bad in (0, -1, "1", True):
                await ws.send(json.dumps({**sleeper, "id": "bad", "extras": {"timeout": bad}}))
                refused.append(json.loads(await ws.recv()))
            extras = {"timeout": 1, "env": {"A": "b"}}
            await ws.send(json.dumps({**sleeper, "id": "t-1", "extras": extras}))
            return refused, await _until_done(ws)

    try:
        refused, frames = anyio.run(scenario)
    finally:
        server.delete(session_id)
    for reply in refused:
        assert reply["extras"]["status"] == "malformed", reply
        assert "extras.timeout" in reply["content"], reply
    final = frames[-1]
    assert final["in_reply_to"] == "t-1"
    assert final["extras"]["status"] == "timeout", final


def test_a_run_is_recorded_in_order_when_its_final_message_arrives(server: Server) -> None:
    """Guards: a run is appended to the transcript as a whole, its code message
    first, and is written before the client gets its final message (fsynced right
    after it, with the default group commit)."""
    session_id = server.create()
    transcript = server.data_dir / "threads" / session_id / "messages.jsonl"

    async def scenario() -> list[dict[str, Any]]:
        url = f"{server.ws_url}/v1/sessions/{session_id}/ws?token={TOKEN}"
        async with connect(url) as ws:
            await ws.send(json.dumps({**CODE, "content": "print('recorded')", "id": "r-1"}))
            await _until_done(ws)
            # Read before anything else is sent: the final message came after the write.
            records = [json.loads(line) for line in transcript.read_text().splitlines()]
        return [record["metadata"]["lmc"] for record in records]

    try:
        messages = anyio.run(scenario)
    finally:
        server.delete(session_id)
    assert messages[0]["id"] == "r-1" and messages[0]["type"] == "code"
    assert [m["in_reply_to"] for m in messages[1:]] == ["r-1"] * (len(messages) - 1)
    assert any(m.get("content") == "recorded\n" for m in messages)
    assert messages[-1]["format"] == "active_line" and messages[-1]["content"] is None


def test_a_refused_run_is_recorded_before_its_reply(server: Server) -> None:
    """Guards: code in a language the session does not run is recorded (code,
    then refusal) before the refusal is sent. It used to be appended after the
    reply, so a client sending refused code quickly queued appends without bound
    behind its own replies."""
    session_id = server.create(languages=["python"])
    transcript = server.data_dir / "threads" / session_id / "messages.jsonl"

    async def scenario() -> list[int]:
        counts = []
        url = f"{server.ws_url}/v1/sessions/{session_id}/ws?token={TOKEN}"
        async with connect(url) as ws:
            for n in range(20):
                code = {**CODE, "format": "ruby", "content": "puts 1", "id": f"x-{n}"}
                await ws.send(json.dumps(code))
                with anyio.fail_after(30):
                    reply = json.loads(await ws.recv())
                assert reply["in_reply_to"] == f"x-{n}"
                assert reply["extras"]["status"] == "not_understood", reply
                counts.append(len(transcript.read_text().splitlines()))
        return counts

    try:
        counts = anyio.run(scenario)
    finally:
        server.delete(session_id)
    assert counts == [2 * (n + 1) for n in range(20)]


def test_bad_hello_frames_are_not_understood_and_change_nothing(server: Server) -> None:
    """Regression: hello frames of the wrong shape got no answer at all, and
    {"hello": {"chunks": "maybe"}} turned chunk framing on; each is now answered
    "not understood" (malformed), and replies stay unchunked."""
    session_id = server.create()
    bad: list[Any] = [
        {"hello": "x"},
        {"hello": [1]},
        {"hello": None},
        {"hello": {"chunks": "maybe"}},
        {"hello": {"chunks": 1}},
        {"hello": {"chunks": True, "bogus": 1}},
        {"hello": {"chunks": True}, "extra": 1},
    ]

    async def scenario() -> list[dict[str, Any]]:
        url = f"{server.ws_url}/v1/sessions/{session_id}/ws"
        answers = []
        async with connect(
            url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, open_timeout=30
        ) as ws:
            for frame in bad:
                await ws.send(json.dumps(frame))
                with anyio.fail_after(30):
                    answers.append(json.loads(await ws.recv()))
            await ws.send(json.dumps({"hello": {}}))  # valid: no answer, framing off
            await ws.send("not json")  # answered unchunked if framing stayed off
            with anyio.fail_after(30):
                answers.append(json.loads(await ws.recv()))
        return answers

    try:
        answers = anyio.run(scenario)
    finally:
        server.delete(session_id)
    for frame, answer in zip(bad, answers, strict=False):
        assert "start" not in answer and "end" not in answer, (frame, answer)
        assert answer["content"].startswith("[lmc] not understood: "), (frame, answer)
        assert answer["extras"]["status"] == "malformed", (frame, answer)
    assert answers[-1]["content"].startswith("[lmc] not understood: not JSON"), answers[-1]
    assert len(answers) == len(bad) + 1
