"""Session options and what the API adds around executions, on a real sandboxed server:
cwd and env of a session, languages enforced, execution counts from 1, per-execution
env on both transports, the language list and the metrics."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
from prometheus_client.parser import text_string_to_metric_families
from websockets.asyncio.client import connect

from .server import CODE, TOKEN, Server, final_status, output, wait_for_pool


@contextmanager
def _session(server: Server, **body: Any) -> Iterator[str]:
    session_id = server.create(**body)
    try:
        yield session_id
    finally:
        server.delete(session_id)


def _execute(server: Server, session_id: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    with server.client() as client:
        response = client.post(f"/v1/sessions/{session_id}/execute", json=message)
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines() if line]


def _over_ws(server: Server, session_id: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    """The replies to ``message`` over the WebSocket, up to its final message (or
    its one not-understood reply)."""

    async def scenario() -> list[dict[str, Any]]:
        url = f"{server.ws_url}/v1/sessions/{session_id}/ws"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        replies: list[dict[str, Any]] = []
        async with connect(url, additional_headers=headers, max_size=None) as ws:
            await ws.send(json.dumps(message))
            with anyio.fail_after(60):
                while True:
                    reply = json.loads(await ws.recv())
                    replies.append(reply)
                    extras = reply.get("extras") or {}
                    if reply["format"] == "active_line" and reply["content"] is None:
                        return replies
                    if extras.get("status") == "not_understood":
                        return replies

    return anyio.run(scenario)


def _final_extras(messages: list[dict[str, Any]]) -> dict[str, Any]:
    assert final_status(messages) is not None
    extras = messages[-1]["extras"]
    assert isinstance(extras, dict)
    return extras


def test_a_session_runs_in_its_cwd_with_its_env(server: Server) -> None:
    body = {"languages": ["python", "shell"], "cwd": "project/src", "env": {"GREETING": "hi"}}
    with _session(server, **body) as session_id:
        with server.client() as client:
            shown = client.get(f"/v1/sessions/{session_id}")
        listed = shown.json()
        assert listed["cwd"] == "project/src" and listed["env"] == ["GREETING"]
        assert listed["pooled"] is False
        assert "hi" not in json.dumps(listed["env"])  # names only, never values
        code = "import os\nprint(os.getcwd())\nprint(os.environ['GREETING'])"
        ran = server.execute(session_id, code)
        assert final_status(ran) == "ok", ran
        cwd, greeting = output(ran).split()
        assert cwd == "/home/user/project/src" and greeting == "hi"
        shell = _execute(
            server, session_id, {**CODE, "format": "bash", "content": "pwd; echo $GREETING"}
        )
        assert final_status(shell) == "ok", shell
        assert output(shell).split() == [cwd, "hi"]


def test_code_in_another_language_is_not_understood_on_both_transports(server: Server) -> None:
    with _session(server, languages=["python"]) as session_id:
        shell = {**CODE, "format": "shell", "content": "echo no", "id": "s1"}
        for replies in (_execute(server, session_id, shell), _over_ws(server, session_id, shell)):
            assert len(replies) == 1, replies
            (reply,) = replies
            assert reply["extras"]["status"] == "not_understood"
            assert "python" in reply["content"] and reply["in_reply_to"] == "s1"
        # An alias of one of the session's languages is fine.
        alias = _execute(server, session_id, {**CODE, "format": "py", "content": "print(2)"})
        assert final_status(alias) == "ok" and output(alias) == "2\n"


def test_the_first_run_is_execution_count_one_pooled_or_not(server: Server) -> None:
    """Regression: the pool's warm-up ran code, so a pooled session's first run said 2."""
    wait_for_pool(server)
    with _session(server) as pooled:
        with server.client() as client:
            assert client.get(f"/v1/sessions/{pooled}").json()["pooled"] is True
        counts = [_final_extras(server.execute(pooled, "1"))["execution_count"] for _ in "ab"]
        assert counts == [1, 2]
    with _session(server, limits={"wall_seconds": 120}) as fresh:
        with server.client() as client:
            assert client.get(f"/v1/sessions/{fresh}").json()["pooled"] is False
        assert _final_extras(server.execute(fresh, "1"))["execution_count"] == 1


def test_per_execution_env_reaches_the_sandboxed_run_on_both_transports(server: Server) -> None:
    code = "import os\nprint(os.environ.get('PER_RUN', 'unset'))"
    with _session(server) as session_id:
        message = {**CODE, "content": code, "extras": {"env": {"PER_RUN": "over-http"}}}
        http = _execute(server, session_id, message)
        assert final_status(http) == "ok" and output(http) == "over-http\n", http
        message["extras"] = {"env": {"PER_RUN": "over-ws"}}
        ws = _over_ws(server, session_id, message)
        assert final_status(ws) == "ok" and output(ws) == "over-ws\n", ws
        after = server.execute(session_id, code)  # for that execution only
        assert output(after) == "unset\n"


def test_the_language_list(server: Server) -> None:
    with server.client() as client:
        languages = client.get("/v1/languages").json()["languages"]
        assert client.get("/v1/languages", headers={"Authorization": ""}).status_code == 401
    by_name = {entry["name"]: entry for entry in languages}
    assert by_name["python"]["available"] is True and "py" in by_name["python"]["aliases"]
    assert by_name["shell"]["available"] is True
    for entry in languages:
        assert entry["available"] or entry["reason"], entry


def _scrape(server: Server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with server.client() as client:
        response = client.get("/metrics")
    assert response.status_code == 200, response.text
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_metrics_count_a_known_sequence_of_executions(server: Server) -> None:
    assert httpx.get(server.url + "/metrics", timeout=10).status_code == 401
    before = _scrape(server)
    with _session(server) as session_id:
        assert final_status(server.execute(session_id, "print(1)")) == "ok"
        assert final_status(server.execute(session_id, "1/0")) == "error"
        slow = server.execute(session_id, "import time\ntime.sleep(60)", timeout=1)
        assert final_status(slow) == "timeout", slow
        during = _scrape(server)
    with _session(server, limits={"output_bytes": 4096}) as session_id:
        flood = server.execute(session_id, "print('x' * 100_000)")
        assert any(m.get("extras", {}).get("status") == "truncated" for m in flood), flood
    after = _scrape(server)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert grew("lmc_sessions_created_total") == 2
    assert grew("lmc_executions_total", language="python", status="ok") == 2
    for status in ("error", "timeout"):
        assert grew("lmc_executions_total", language="python", status=status) == 1, status
    # Regression: cut output ends "ok", and was counted as no limit hit at all.
    assert grew("lmc_limit_hits_total", kind="wall") == 1
    assert grew("lmc_limit_hits_total", kind="output") == 1
    assert grew("lmc_execution_seconds_count", language="python") == 4
    assert during[("lmc_sessions", (("state", "idle"),))] >= 1
