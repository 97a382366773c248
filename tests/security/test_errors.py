"""Class 11: a bad request is a 4xx with a JSON reason, never a 500 with a traceback.

Each test sends what made the service answer 500 (or log a traceback) before:
a malformed ``Origin``, limits below the sandbox's minimums, a kernel that
cannot restart, a client that leaves in the middle of an upload. A sweep of
other hostile requests guards the class.
"""

from __future__ import annotations

import json
import signal
import socket
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.integration.service.server import CODE, TOKEN, Server

from .harness import Account, serve_as

MALFORMED_ORIGINS = [
    "http://localhost:99999",
    "http://x:abc",
    "http://127.0.0.1:-1",
    "http://[::1",
    "http://[zz]:80",
    "https://:443",
    "http://a:1:2",
    "http://x:" + "9" * 5000,
]


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    """The server under attack, shared by the module's tests on purpose: each test
    makes sessions of its own, and one server facing them all is the setting."""
    with serve_as(account, "--pool-size", "0", "--max-sessions", "4") as running:
        yield running


def _assert_json_4xx(response: httpx.Response) -> dict[str, Any]:
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    assert "Traceback" not in response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] and body["error"]["message"], body
    return dict(body["error"])


@pytest.mark.parametrize("origin", MALFORMED_ORIGINS)
def test_malformed_origin_is_a_4xx_without_a_token(server: Server, origin: str) -> None:
    """Guards: a malformed Origin port raised ValueError in the Origin check: a
    500 reachable with no token at all."""
    with server.client(token=None) as client:
        for path in ("/v1/sessions", "/v1/sessions/nope/files/x"):
            _assert_json_4xx(client.get(path, headers={"Origin": origin}))
    with server.client() as client:
        error = _assert_json_4xx(client.get("/v1/sessions", headers={"Origin": origin}))
        assert error["code"] == "forbidden", error


@pytest.mark.parametrize("origin", MALFORMED_ORIGINS[:3])
def test_malformed_origin_refuses_the_websocket_with_403(server: Server, origin: str) -> None:
    """Guards: the same Origin check on the WebSocket handshake answered 500."""

    async def handshake() -> int:
        url = f"{server.ws_url}/v1/sessions/nope/ws?token={TOKEN}"
        try:
            async with connect(url, origin=origin, open_timeout=30):  # type: ignore[arg-type]
                return 101
        except InvalidStatus as exc:
            return exc.response.status_code

    assert anyio.run(handshake) == 403


@pytest.mark.parametrize(
    "limits",
    [
        {"memory_bytes": 1},
        {"processes": 1},
        # Under these no kernel starts: they were a 503 quoting its traceback.
        {"processes": 12},
        {"memory_bytes": 32 << 20},
        {"file_size_bytes": 100},
        {"disk_bytes": 1},
        {"cpu_seconds": 0.001},
        {"wall_seconds": 0.001},
        {"memory_bytes": True},
        {"processes": 10**30},
        {"cpu_seconds": "NaN"},
        {"cpu_seconds": 1e308},
    ],
)
def test_limits_out_of_range_are_400(server: Server, limits: dict[str, Any]) -> None:
    """Guards: limits below the sandbox's minimums raised the dataclass's
    ValueError into a 500."""
    with server.client() as client:
        response = client.post("/v1/sessions", json={"limits": limits})
        error = _assert_json_4xx(response)
        assert response.status_code == 400, error
        assert client.get("/v1/sessions").json()["sessions"] == []


def test_kernel_start_error_on_restart_is_a_4xx(server: Server) -> None:
    """Guards: a kernel that cannot start again (the session's own startup file
    kills it) raised KernelStartError out of /restart as a 500."""
    session_id = server.create()
    try:
        plant = (
            "import pathlib, IPython.paths\n"
            "p = pathlib.Path(IPython.paths.get_ipython_dir()) / 'profile_default/startup'\n"
            "p.mkdir(parents=True, exist_ok=True)\n"
            "(p / '00-exit.py').write_text('import os\\nos._exit(3)\\n')\n"
            "print('planted')"
        )
        assert any(m.get("content") == "planted\n" for m in server.execute(session_id, plant))
        with server.client() as client:
            response = client.post(f"/v1/sessions/{session_id}/restart", json={})
            error = _assert_json_4xx(response)
            assert error["code"] == "kernel_start_failed", error
            # The session is still there and can say what happened next time.
            assert client.get(f"/v1/sessions/{session_id}").status_code == 200
    finally:
        server.delete(session_id)


def _hostile_requests(session_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    files = f"/v1/sessions/{session_id}/files"
    return [
        ("POST", "/v1/sessions", {"content": b"[" * 100_000}),
        ("POST", "/v1/sessions", {"content": b"1" * 100_000}),
        ("POST", "/v1/sessions", {"json": {"languages": ["python"] * 17}}),
        ("POST", "/v1/sessions", {"json": {"languages": ["nope"]}}),
        ("POST", "/v1/sessions", {"json": {"limits": {"nope": 1}}}),
        ("POST", "/v1/sessions", {"json": {"limits": []}}),
        ("POST", "/v1/sessions", {"json": []}),
        ("POST", "/v1/sessions", {"content": b"\xff\xfe"}),
        ("POST", f"/v1/sessions/{session_id}/restart", {"json": {"language": "cobol"}}),
        ("POST", f"/v1/sessions/{session_id}/restart", {"json": {"language": 1}}),
        ("POST", f"/v1/sessions/{session_id}/execute", {"json": {**CODE, "content": 1}}),
        ("POST", f"/v1/sessions/{session_id}/execute", {"params": {"timeout": "nan"}}),
        ("POST", f"/v1/sessions/{session_id}/execute", {"params": {"timeout": "-1"}}),
        ("PUT", f"{files}/{'a' * 300}", {"content": b"x"}),
        ("PUT", f"{files}/{('d' * 250 + '/') * 20}x", {"content": b"x"}),
        ("PUT", f"{files}/a%00b", {"content": b"x"}),
        ("PUT", f"{files}/.", {"content": b"x"}),
        ("PUT", f"{files}/dir", {"content": b"x"}),
        ("PUT", f"{files}/dir/x/y", {"content": b"x"}),
        ("GET", f"{files}/{'a' * 300}", {}),
        ("GET", f"{files}/dir", {}),
        ("GET", f"{files}/missing", {}),
        ("GET", f"{files}/fifo", {}),
        ("GET", f"{files}/link", {}),
        ("GET", "/v1/sessions/../../etc/passwd", {}),
        ("DELETE", "/v1/sessions/nope", {}),
        ("POST", "/v1/sessions/nope/interrupt", {}),
    ]


def test_hostile_requests_are_never_a_500(server: Server) -> None:
    """Guards the class: malformed bodies, paths and parameters are 4xx with a
    JSON reason, never a 500."""
    session_id = server.create()
    try:
        setup = (
            "import os\nos.mkdir('dir')\nos.mkfifo('fifo')\nos.symlink('/etc/passwd', 'link')\n"
            "print('ready')"
        )
        assert any(m.get("content") == "ready\n" for m in server.execute(session_id, setup))
        with server.client() as client:
            for method, path, extra in _hostile_requests(session_id):
                response = client.request(method, path, **extra)
                assert response.status_code != 500, (method, path[:80], response.text)
                if response.status_code >= 400:
                    _assert_json_4xx(response)
    finally:
        server.delete(session_id)


#: A body sent as JSON text: ``json.dumps`` escapes the lone surrogates httpx cannot encode.
_JSON = {"content-type": "application/json"}


def test_values_no_process_can_start_with_are_400_not_a_failed_start(server: Server) -> None:
    """Regression: a cwd component past 255 bytes, an env value past Linux's 128 KiB
    or with a lone surrogate passed validation and failed the kernel's start (503,
    a traceback, and the host's interpreter path in the message); the same
    surrogate in a run's ``extras.env`` was an internal error."""
    bodies = [
        {"cwd": "a" * 256},
        {"cwd": "x/" + "y" * 256},
        {"env": {"A": "\ud800"}},
        {"env": {"A": "x" * 140_000}},
    ]
    with server.client() as client:
        for body in bodies:
            response = client.post("/v1/sessions", content=json.dumps(body), headers=_JSON)
            assert response.status_code == 400, (str(body)[:80], response.text)
            _assert_json_4xx(response)
    session_id = server.create()
    try:
        for env in ({"A": "\ud800"}, {"\udfff": "x"}):
            with server.client() as client:
                body = json.dumps({**CODE, "content": "1", "extras": {"env": env}})
                response = client.post(
                    f"/v1/sessions/{session_id}/execute", content=body, headers=_JSON
                )
            replies = [json.loads(line) for line in response.text.splitlines() if line]
            assert [m["content"] for m in replies if m.get("format") == "output"] == [
                f"[lmc] not understood: extras.env {next(iter(env))!r} or its value is "
                "not valid UTF-8 (a lone surrogate)\n"
            ], replies
    finally:
        server.delete(session_id)


def _abandoned_upload(server: Server, session_id: str) -> None:
    """Send the headers and half the body of an upload, then leave."""
    head = (
        f"PUT /v1/sessions/{session_id}/files/half HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Length: 1000000\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head.encode() + b"x" * 500_000)


def test_client_leaving_mid_upload_is_no_500(account: Account) -> None:
    """Guards: a client that left in the middle of an upload raised
    ClientDisconnect out of the route: an 'Exception in ASGI application'
    traceback and a 500. Nothing of the upload may remain."""
    with serve_as(account, "--pool-size", "0", "--max-sessions", "2") as server:
        session_id = server.create()
        for _ in range(3):
            _abandoned_upload(server, session_id)
        listing = "import os\nprint([n for n in os.listdir('.') if 'upload' in n or n == 'half'])"
        deadline = time.monotonic() + 60
        while not any(m.get("content") == "[]\n" for m in server.execute(session_id, listing)):
            assert time.monotonic() < deadline, "an abandoned upload left its file behind"
        with server.client() as client:
            response = client.put(f"/v1/sessions/{session_id}/files/ok", content=b"1")
            assert response.status_code == 201, response.text
        # A graceful shutdown waits for every request task: their logs are all written.
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=60)
        log = server.log(wait=30)
    assert "Traceback" not in log, log[-3000:]
    assert "Exception in ASGI application" not in log, log[-3000:]


def test_error_bodies_are_json(server: Server) -> None:
    """Guards: unknown routes and methods answer in the same JSON shape."""
    with server.client() as client:
        for response in (client.get("/nope"), client.patch("/v1/sessions")):
            error = _assert_json_4xx(response)
            assert json.dumps(error)
