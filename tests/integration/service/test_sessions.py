"""Sessions over HTTP: lifecycle, NDJSON streaming, errors, interrupt, restart, pool, transcripts."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from .server import CODE, Server, final_status, output, wait_for_pool


def test_create_list_get_delete(server: Server) -> None:
    session_id = server.create(languages=["python"])
    with server.client() as client:
        listed = [s["id"] for s in client.get("/v1/sessions").json()["sessions"]]
        assert session_id in listed
        one = client.get(f"/v1/sessions/{session_id}").json()
        assert one["id"] == session_id and one["sandboxed"] is True and one["network"] is False
        assert one["usage"]["sandboxed"] is True
        assert client.delete(f"/v1/sessions/{session_id}").status_code == 204
        gone = client.get(f"/v1/sessions/{session_id}")
        assert gone.status_code == 404
        assert "it was deleted" in gone.json()["error"]["message"]
        assert session_id not in [s["id"] for s in client.get("/v1/sessions").json()["sessions"]]


def test_unknown_session_and_bad_requests(server: Server) -> None:
    with server.client() as client:
        missing = client.post("/v1/sessions/nope/execute", json={**CODE, "content": "1"})
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"
        assert client.post("/v1/sessions", json={"languages": ["cobol"]}).status_code == 400
        assert client.post("/v1/sessions", json={"bogus": 1}).status_code == 400
        too_high = client.post("/v1/sessions", json={"limits": {"wall_seconds": 10**9}})
        assert too_high.status_code == 400 and "at most" in too_high.json()["error"]["message"]
    session_id = server.create()
    try:
        with server.client() as client:
            url = f"/v1/sessions/{session_id}/execute"
            not_json = client.post(url, content=b"{nope")
            assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "malformed"
            not_code = client.post(url, json={"role": "user", "type": "message", "content": "hi"})
            assert not_code.status_code == 400
            assert "only assistant code messages" in not_code.json()["error"]["message"]
            big = client.post(url, json={**CODE, "content": "x" * (2 << 20)})
            assert big.status_code == 413 and big.json()["error"]["code"] == "too_large"
            # The session is still fine after all that.
            assert output(server.execute(session_id, "print(6*7)")) == "42\n"
    finally:
        server.delete(session_id)


def test_execute_streams_ndjson_as_produced(server: Server) -> None:
    session_id = server.create()
    code = "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second')"
    arrivals: list[tuple[float, dict[str, Any]]] = []
    try:
        with server.client() as client:
            body = {**CODE, "content": code, "id": "m-stream"}
            with client.stream("POST", f"/v1/sessions/{session_id}/execute", json=body) as resp:
                assert resp.status_code == 200
                for line in resp.iter_lines():
                    if line:
                        arrivals.append((time.monotonic(), json.loads(line)))
        messages = [m for _, m in arrivals]
        assert all(m["in_reply_to"] == "m-stream" for m in messages)
        assert final_status(messages) == "ok"
        first = next(t for t, m in arrivals if m.get("content") == "first\n")
        second = next(t for t, m in arrivals if m.get("content") == "second\n")
        # "first" was on the wire before the code finished sleeping.
        assert second > first
        assert any(m["format"] == "active_line" and m["content"] == 3 for m in messages)
    finally:
        server.delete(session_id)


def test_busy_session_answers_409_and_interrupt_stops_sleep(server: Server) -> None:
    session_id = server.create()
    result: dict[str, list[dict[str, Any]]] = {}
    started = threading.Event()

    def long_run() -> None:
        with server.client() as client:
            body = {
                **CODE,
                "content": "import time\nprint('sleeping', flush=True)\ntime.sleep(100)",
            }
            with client.stream("POST", f"/v1/sessions/{session_id}/execute", json=body) as resp:
                lines = []
                for line in resp.iter_lines():
                    if line:
                        lines.append(json.loads(line))
                        started.set()
                result["messages"] = lines

    worker = threading.Thread(target=long_run)
    worker.start()
    try:
        assert started.wait(30), "the long execution never streamed"
        with server.client() as client:
            busy = client.post(f"/v1/sessions/{session_id}/execute", json={**CODE, "content": "1"})
            assert busy.status_code == 409
            assert busy.json()["error"]["code"] == "busy"
            assert client.get(f"/v1/sessions/{session_id}").json()["state"] == "busy"
            assert client.post(f"/v1/sessions/{session_id}/interrupt").status_code == 202
        worker.join(30)
        assert not worker.is_alive(), "the interrupt did not stop time.sleep(100)"
        messages = result["messages"]
        assert final_status(messages) == "interrupted"
        assert "KeyboardInterrupt" in output(messages) or "interrupt" in output(messages).lower()
        # Free again, state kept.
        assert output(server.execute(session_id, "print('after')")) == "after\n"
    finally:
        worker.join(30)
        server.delete(session_id)


def test_restart_loses_state(server: Server) -> None:
    session_id = server.create()
    try:
        server.execute(session_id, "x = 41")
        with server.client() as client:
            response = client.post(
                f"/v1/sessions/{session_id}/restart", json={"language": "python"}
            )
            assert response.status_code == 200
        messages = server.execute(session_id, "print('x' in dir())")
        assert output(messages) == "False\n"
    finally:
        server.delete(session_id)


def test_pooled_session_runs_its_first_execution(server: Server) -> None:
    wait_for_pool(server)
    with server.client() as client:
        created = client.post("/v1/sessions", json={})
    assert created.status_code == 201
    info = created.json()
    assert info["pooled"] is True and info["state"] == "idle"
    try:
        messages = server.execute(info["id"], "import os\nprint(os.getcwd() == '/home/user')")
        assert output(messages) == "True\n"
        assert final_status(messages) == "ok"
    finally:
        server.delete(info["id"])


def test_max_sessions_answers_429(server: Server) -> None:
    made: list[str] = []
    try:
        with server.client() as client:
            for _ in range(10):
                response = client.post("/v1/sessions", json={})
                if response.status_code != 201:
                    break
                made.append(response.json()["id"])
        assert len(made) == 4
        assert response.status_code == 429
        assert response.json()["error"]["code"] == "too_many_sessions"
        # Regression: warm sessions count against the maximum too (4 kernels, not 5).
        with server.client() as client:
            assert client.get("/healthz").json()["pool_ready"] == 0
    finally:
        for session_id in made:
            server.delete(session_id)
    assert server.create()  # room again
    wait_for_pool(server)  # and the pool refills once clients leave


def test_transcript_is_written_in_jan_layout(server: Server) -> None:
    session_id = server.create(title="transcript test")
    try:
        server.execute(session_id, "print('hello transcript')")
        folder = server.data_dir / "threads" / session_id
        thread = json.loads((folder / "thread.json").read_text())
        assert thread["id"] == session_id
        lines = [json.loads(line) for line in (folder / "messages.jsonl").read_text().splitlines()]
        text = json.dumps(lines)
        assert "print('hello transcript')" in text  # the assistant message
        assert "hello transcript\\n" in text  # the computer's output
        roles = [line.get("role") for line in lines]
        assert roles[0] == "assistant" and len(lines) >= 3
    finally:
        server.delete(session_id)


def test_a_run_whose_client_left_is_recorded_with_a_final_message(server: Server) -> None:
    """Regression: a client that dropped its connection mid-run left the run in the
    transcript without a final message: the record did not say how the run ended."""
    session_id = server.create()
    transcript = server.data_dir / "threads" / session_id / "messages.jsonl"
    body = {
        **CODE,
        "id": "left-1",
        "content": "print('started', flush=True)\nimport time\ntime.sleep(30)",
    }
    try:
        with server.client() as client:
            url = f"/v1/sessions/{session_id}/execute"
            with client.stream("POST", url, json=body) as response:
                for line in response.iter_lines():
                    if "started" in line:
                        break  # and leave
        deadline = time.monotonic() + 60
        while True:  # its code is written before it runs; its end once it ends
            records = [
                json.loads(line)["metadata"]["lmc"]
                for line in (transcript.read_text() if transcript.is_file() else "").splitlines()
            ]
            run = [m for m in records if "left-1" in (m.get("id"), m.get("in_reply_to"))]
            if run and run[-1]["format"] == "active_line" and run[-1]["content"] is None:
                break
            assert time.monotonic() < deadline, "the left run was never recorded with its end"
            time.sleep(0.05)
        assert run[0]["id"] == "left-1" and run[-1]["format"] == "active_line"
        assert run[-1]["content"] is None and run[-1]["extras"]["status"] == "interrupted"
        assert run[-1]["extras"]["client_left"] is True
        assert final_status(server.execute(session_id, "print('next')")) == "ok"
    finally:
        server.delete(session_id)
