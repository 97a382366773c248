"""Attacks on the E2B control plane's listing, metrics, pause and resume, and
its 501s: each wants the server's key, malformed queries are 400s (never a
500), page tokens carry no sandbox id, a paused sandbox's processes are gone
with it, and only a request that could reach a sandbox may resume it."""

from __future__ import annotations

import base64
import secrets
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.integration.service.server import Server
from tests.security.e2b_door import (
    KEY,
    create,
    door_server,
    kill,
    marked_pids,
    traffic,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)

LMC = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with door_server() as server:
        yield server


def _api(
    server: Server, method: str, path: str, key: str | None = KEY, **kw: object
) -> httpx.Response:
    headers = {"X-API-Key": key} if key else {}
    return httpx.request(method, server.url + path, headers=headers, timeout=60, **kw)  # type: ignore[arg-type]


def _state(server: Server, sandbox_id: str) -> str:
    answer = _api(server, "GET", f"/sandboxes/{sandbox_id}")
    assert answer.status_code == 200, answer.text
    return str(answer.json()["state"])


def _no_tracebacks(server: Server) -> None:
    assert "Traceback" not in server.log()


ROUTES = [
    ("GET", "/v2/sandboxes?state=paused"),
    ("GET", "/sandboxes?metadata=a%3Db"),
    ("GET", "/sandboxes/{id}/metrics"),
    ("GET", "/sandboxes/metrics?sandbox_ids={id}"),
    ("POST", "/sandboxes/{id}/pause"),
    ("POST", "/sandboxes/{id}/resume"),
    ("POST", "/sandboxes/{id}/connect"),
    ("POST", "/sandboxes/{id}/fork"),
    ("POST", "/sandboxes/{id}/snapshots"),
    ("PUT", "/sandboxes/{id}/network"),
    ("GET", "/templates"),
    ("DELETE", "/templates/base"),
    ("GET", "/teams"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("key", [None, "e2b_" + "f" * 40, KEY + "0", KEY.upper()])
def test_every_route_wants_the_key_and_does_nothing_without_it(
    server: Server, method: str, path: str, key: str | None
) -> None:
    sandbox_id = create(server)["sandboxID"]
    try:
        answer = _api(server, method, path.format(id=sandbox_id), key, json={})
        assert answer.status_code == 401, answer.text
        assert sandbox_id not in answer.text
        assert _state(server, sandbox_id) == "running"
    finally:
        kill(server, sandbox_id)


@pytest.mark.parametrize(
    "query",
    [
        "nextToken=garbage!!",
        "nextToken=" + base64.urlsafe_b64encode(b"nan:00").decode(),
        "nextToken=" + base64.urlsafe_b64encode(b"1e400:zz").decode(),
        "nextToken=" + base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        "nextToken=" + "A" * 20000,
        "metadata=%25ZZ%3D%26%3D%3D",
        "metadata=" + "k%3Dv%26" * 2000,
        "state=deleted",
        "state=running,,paused,",
        "limit=0",
        "limit=-1",
        "limit=101",
        "limit=1e9",
        "limit=99999999999999999999999",
        "startedAfter=yesterday",
        "order=sideways",
        "template=" + "x" * 5000,
    ],
)
def test_malformed_list_queries_are_answered_never_a_500(server: Server, query: str) -> None:
    answer = _api(server, "GET", "/v2/sandboxes?" + query)
    assert answer.status_code in (200, 400), answer.text
    body = answer.json()
    assert isinstance(body, list) or body["code"] == 400
    _no_tracebacks(server)


def test_page_tokens_carry_no_sandbox_id(server: Server) -> None:
    made = [create(server, metadata={"paged": "yes"})["sandboxID"] for _ in range(3)]
    try:
        token: str | None = None
        seen: list[str] = []
        for _ in range(5):
            params = {"limit": "1", "metadata": "paged=yes"}
            if token:
                params["nextToken"] = token
            page = httpx.get(
                server.url + "/v2/sandboxes", params=params, headers={"X-API-Key": KEY}
            )
            assert page.status_code == 200, page.text
            seen += [s["sandboxID"] for s in page.json()]
            token = page.headers.get("x-next-token")
            if not token:
                break
            decoded = base64.urlsafe_b64decode(token.encode()).decode()
            assert not any(i in token or i in decoded for i in made)
            assert not any(i[:8] in decoded for i in made)
        assert sorted(seen) == sorted(made)
    finally:
        for sandbox_id in made:
            kill(server, sandbox_id)


@pytest.mark.parametrize(
    "ids", [",".join(["a" * 32] * 101), "a" * 20000, ",,,,", "../../etc/passwd"]
)
def test_metrics_of_many_sandboxes_are_bounded(server: Server, ids: str) -> None:
    answer = _api(server, "GET", "/sandboxes/metrics", params={"sandbox_ids": ids})
    assert answer.status_code in (200, 400), answer.text
    if answer.status_code == 200:
        assert answer.json() == {"sandboxes": {}}
    _no_tracebacks(server)


def test_another_sandboxs_metrics_need_its_id(server: Server) -> None:
    sandbox_id = create(server)["sandboxID"]
    try:
        near = sandbox_id[:-1] + ("a" if sandbox_id[-1] != "a" else "b")
        for probe in (near, sandbox_id.upper(), sandbox_id + " ", sandbox_id[:16]):
            answer = _api(server, "GET", "/sandboxes/metrics", params={"sandbox_ids": probe})
            assert answer.json() == {"sandboxes": {}}
            assert _api(server, "GET", f"/sandboxes/{probe}/metrics").status_code in (404, 400)
    finally:
        kill(server, sandbox_id)


def test_a_secure_sandbox_is_not_resumed_by_traffic_without_its_token(server: Server) -> None:
    made = create(server, secure=True, autoPause=True, autoResume={"enabled": True})
    sandbox_id, token = made["sandboxID"], made["envdAccessToken"]
    try:
        assert _api(server, "POST", f"/sandboxes/{sandbox_id}/pause").status_code == 204
        for headers in ({}, {"X-Access-Token": token[:-2]}, {"X-Access-Token": "x" * 5000}):
            for path in ("/health", "/files?path=/etc/passwd"):
                answer = traffic(server, sandbox_id, path, headers=headers)
                assert answer.status_code in (401, 502), answer.text
            assert _state(server, sandbox_id) == "paused"
        # With it, the request resumes it.
        answer = traffic(server, sandbox_id, "/health", headers={"X-Access-Token": token})
        assert answer.status_code in (200, 204), answer.text
        assert _state(server, sandbox_id) == "running"
    finally:
        kill(server, sandbox_id)


def test_a_sandbox_without_auto_resume_stays_paused_whatever_comes(server: Server) -> None:
    sandbox_id = create(server)["sandboxID"]
    try:
        assert _api(server, "POST", f"/sandboxes/{sandbox_id}/pause").status_code == 204
        for port in (49983, 49999, 1):
            answer = traffic(server, sandbox_id, "/health", port=port)
            assert answer.status_code == 502, answer.text
        assert _state(server, sandbox_id) == "paused"
    finally:
        kill(server, sandbox_id)


def _session_with_a_process(server: Server, mark: str) -> None:
    """Leave a process of the sandbox's (marked ``mark``) that outlives its run."""
    sessions = httpx.get(server.url + "/v1/sessions", headers=LMC).json()["sessions"]
    code = (
        "import os, subprocess\n"
        f"if os.environ.get('MARK') == {mark!r}:\n"
        "    subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
        "    print('left')\n"
    )
    body = {"role": "assistant", "type": "code", "format": "python", "content": code}
    left = 0
    for entry in sessions:
        run = httpx.post(
            f"{server.url}/v1/sessions/{entry['id']}/execute", json=body, headers=LMC, timeout=120
        )
        left += "left" in run.text
    assert left == 1, "the sandbox's session was not found"
    assert marked_pids(mark)


def test_a_paused_sandbox_is_killed_with_its_processes(server: Server) -> None:
    mark = "lmc-paused-" + secrets.token_hex(6)
    sandbox_id = create(server, envVars={"MARK": mark})["sandboxID"]
    _session_with_a_process(server, mark)
    assert _api(server, "POST", f"/sandboxes/{sandbox_id}/pause").status_code == 204
    assert kill(server, sandbox_id).status_code == 204
    wait_until(lambda: not marked_pids(mark), 20, "the paused sandbox's processes end")


def test_a_paused_sandbox_does_not_hold_up_the_servers_end() -> None:
    mark = "lmc-paused-" + secrets.token_hex(6)
    with door_server() as server:
        sandbox_id = create(server, envVars={"MARK": mark})["sandboxID"]
        _session_with_a_process(server, mark)
        assert _api(server, "POST", f"/sandboxes/{sandbox_id}/pause").status_code == 204
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=60) is not None
        assert time.monotonic() - started < 30
    wait_until(lambda: not marked_pids(mark), 20, "the paused sandbox's processes end")


def test_pause_resume_and_kill_racing_never_500_and_leave_nothing_frozen(server: Server) -> None:
    mark = "lmc-race-" + secrets.token_hex(6)
    sandbox_id = create(server, envVars={"MARK": mark})["sandboxID"]
    _session_with_a_process(server, mark)
    calls = [
        ("POST", f"/sandboxes/{sandbox_id}/pause"),
        ("POST", f"/sandboxes/{sandbox_id}/resume"),
        ("POST", f"/sandboxes/{sandbox_id}/connect"),
        ("GET", f"/sandboxes/{sandbox_id}/metrics"),
    ] * 10

    def call(item: tuple[str, str]) -> int:
        return _api(server, item[0], item[1], json={"timeout": 60}).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(call, calls))
    assert set(statuses) <= {200, 201, 204, 409}, statuses
    # Whatever order they came in, a connect leaves it running, its processes too.
    assert _api(server, "POST", f"/sandboxes/{sandbox_id}/connect", json={}).status_code in (
        200,
        201,
    )
    assert _state(server, sandbox_id) == "running"

    def stopped() -> bool:
        states = []
        for pid in marked_pids(mark):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                continue
        return any(s in ("T", "t") for s in states)

    assert not stopped(), "a process was left stopped after the sandbox was resumed"
    assert kill(server, sandbox_id).status_code == 204
    wait_until(lambda: not marked_pids(mark), 20, "the sandbox's processes end")
    _no_tracebacks(server)


def test_pause_and_metrics_never_log_an_id_whole(server: Server) -> None:
    sandbox_id = create(server)["sandboxID"]
    _api(server, "GET", f"/sandboxes/{sandbox_id}/metrics")
    _api(server, "POST", f"/sandboxes/{sandbox_id}/pause")
    _api(server, "POST", f"/sandboxes/{sandbox_id}/pause")
    _api(server, "POST", f"/sandboxes/{sandbox_id}/fork", json={})
    _api(server, "GET", "/sandboxes/metrics", params={"sandbox_ids": sandbox_id})
    _api(server, "POST", f"/sandboxes/{sandbox_id}/resume", json={"timeout": 30})
    kill(server, sandbox_id)
    assert sandbox_id not in server.log()
