"""WebSocket abuse against a real server: malformed and binary frames, an oversized
frame, a burst of 1000 messages, and a client that disconnects mid-stream."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from .server import CODE, TOKEN, Server, final_status, output


def _url(server: Server, session_id: str) -> str:
    return f"{server.ws_url}/v1/sessions/{session_id}/ws?token={TOKEN}"


async def _reply(ws: ClientConnection) -> dict[str, Any]:
    with anyio.fail_after(30):
        return dict(json.loads(await ws.recv()))


async def _run(ws: ClientConnection, code: str, message_id: str) -> list[dict[str, Any]]:
    await ws.send(json.dumps({**CODE, "content": code, "id": message_id}))
    frames = []
    while True:
        frame = await _reply(ws)
        frames.append(frame)
        if frame["format"] == "active_line" and frame["content"] is None:
            return frames


def _healthy(server: Server, session_id: str) -> None:
    with server.client() as client:
        assert client.get("/healthz").json()["status"] == "ok"
    assert output(server.execute(session_id, "print('still fine')")) == "still fine\n"


@pytest.fixture
def session_id(server: Server) -> Any:
    created = server.create()
    yield created
    server.delete(created)


def test_malformed_and_binary_frames_are_answered_and_the_connection_kept(
    server: Server, session_id: str
) -> None:
    garbage = [
        "this is not json",
        "[" * 100_000,  # nested too deeply for the decoder
        "1" * 10_000,  # an integer too long to convert
        "[]",
        "42",
        '"text"',
        '{"role": "assistant", "type": "code", "content": "no format"}',
        '{"content": "a chunk without its start"}',
        '{"control": "reboot"}',
    ]

    async def scenario() -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
        async with connect(_url(server, session_id), max_size=None) as ws:
            answers = []
            for text in garbage:
                await ws.send(text)
                answers.append(await _reply(ws))
            await ws.send(b"\x00\x01binary")
            binary = await _reply(ws)
            return answers, binary, await _run(ws, "print('after garbage')", "ok-1")

    answers, binary, after = anyio.run(scenario)
    for text, answer in zip(garbage, answers, strict=True):
        assert answer["content"].startswith("[lmc] "), (text[:40], answer)
        assert answer["extras"]["status"] in ("malformed", "not_understood"), answer
    assert "nested too deeply" in answers[1]["content"]
    assert "binary frames" in binary["content"] and binary["extras"]["status"] == "malformed"
    assert output(after) == "after garbage\n" and final_status(after) == "ok"
    _healthy(server, session_id)


def test_oversized_frame_and_chunked_message_are_refused_cleanly(
    server: Server, session_id: str
) -> None:
    header = {"role": "assistant", "type": "code", "format": "python"}

    async def chunked() -> dict[str, Any]:
        async with connect(_url(server, session_id), max_size=None) as ws:
            await ws.send(json.dumps({**header, "start": True, "id": "big-1"}))
            piece = json.dumps({**header, "content": "x" * (400 << 10)})
            for _ in range(4):  # 1.6 MiB in all, each frame under the frame limit
                await ws.send(piece)
            await ws.send(json.dumps({**header, "end": True}))
            answer = await _reply(ws)
            # The connection is still usable afterwards.
            after = await _run(ws, "print('small')", "small-1")
            assert output(after) == "small\n"
            return answer

    answer = anyio.run(chunked)
    assert "larger than" in answer["content"] and answer["extras"]["status"] == "malformed"

    async def oversized() -> int | None:
        async with connect(_url(server, session_id), max_size=None) as ws:
            await ws.send(json.dumps({**CODE, "content": "#" * (2 << 20)}))
            try:
                with anyio.fail_after(30):
                    while True:
                        await ws.recv()
            except ConnectionClosed as closed:
                return closed.rcvd.code if closed.rcvd else None

    assert anyio.run(oversized) == 1009  # "message too big"
    _healthy(server, session_id)


def test_a_burst_of_1000_messages_is_each_answered(server: Server, session_id: str) -> None:
    count = 1000

    async def scenario() -> dict[str, dict[str, Any]]:
        done: dict[str, dict[str, Any]] = {}
        async with connect(_url(server, session_id), max_size=None, max_queue=None) as ws:

            async def send_all() -> None:
                for number in range(count):
                    body = {**CODE, "content": f"print({number})", "id": f"m-{number}"}
                    await ws.send(json.dumps(body))

            with anyio.fail_after(110):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(send_all)
                    while len(done) < count:
                        frame = json.loads(await ws.recv())
                        ended = frame["format"] == "active_line" and frame["content"] is None
                        if ended or (frame.get("extras") or {}).get("status") == "busy":
                            done[frame["in_reply_to"]] = frame
        return done

    done = anyio.run(scenario)
    assert set(done) == {f"m-{number}" for number in range(count)}
    ran = [f for f in done.values() if f["format"] == "active_line"]
    refused = [f for f in done.values() if f["format"] == "output"]
    assert ran, "not one of the messages ran"
    assert all(f["extras"]["status"] == "ok" for f in ran)
    assert all("is running code" in f["content"] for f in refused)
    _healthy(server, session_id)


def test_disconnect_mid_stream_interrupts_the_code_and_frees_the_session(
    server: Server, session_id: str
) -> None:
    code = "import time\nstate = 'running'\nprint('started', flush=True)\ntime.sleep(300)\nstate = 'finished'"

    async def scenario() -> None:
        async with connect(_url(server, session_id)) as ws:
            await ws.send(json.dumps({**CODE, "content": code, "id": "long-1"}))
            while (await _reply(ws)).get("content") != "started\n":
                pass
        # The connection is closed here, with the code still sleeping.

    anyio.run(scenario)
    with server.client() as client:
        deadline = time.monotonic() + 30
        while client.get(f"/v1/sessions/{session_id}").json()["state"] != "idle":
            assert time.monotonic() < deadline, "the session stayed busy after the disconnect"
            time.sleep(0.05)
        body = {**CODE, "content": "print(state)"}
        response = client.post(
            f"/v1/sessions/{session_id}/execute", json=body, timeout=httpx.Timeout(60)
        )
    assert response.status_code == 200, response.text
    messages = [json.loads(line) for line in response.text.splitlines() if line]
    # The code was stopped (not left to finish its sleep); its state is kept.
    assert output(messages).endswith("running\n"), messages
    assert final_status(messages) == "ok"
