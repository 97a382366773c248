"""Attacks on the E2B door's control plane (``/sandboxes``, ``/v2/sandboxes``):
the server's token in the wrong place or not at all, a web page driving it (its
Origin, or a DNS-rebinding Host when the server runs without a token), bodies
and numbers too large, and floods of creates.

The lmc API's rules hold here too: what ``/v1/sessions`` refuses, the control
plane refuses, with the same status."""

from __future__ import annotations

import concurrent.futures
import json
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.service.server import Server

from .e2b_door import DOMAIN, KEY, create, door_server, kill, raw_request, status_of

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with door_server("--max-sessions", "3") as server:
        yield server


@pytest.fixture(scope="module")
def open_server() -> Iterator[Server]:
    """A server without a token (``--no-auth``, loopback only)."""
    with door_server("--no-auth", token=None) as server:
        yield server


def _sessions(server: Server) -> int:
    return int(httpx.get(server.url + "/healthz", timeout=10).json()["sessions"])


def _no_tracebacks(server: Server, since: int) -> None:
    """Nothing failed in the server since its log was ``since`` characters long."""
    log = server.log()[since:]
    assert "Traceback" not in log and " 500 " not in log, log[-3000:]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-API-Key": "e2b_" + "0" * 40},
        {"X-API-Key": KEY + "x"},
        {"X-API-Key": KEY[:-1]},
        {"Authorization": KEY},  # no scheme
        {"Authorization": f"Basic {KEY}"},
        {"X-Access-Token": KEY},  # envd's header, not the control plane's
        {"E2b-Api-Key": KEY},
    ],
    ids=["none", "other", "longer", "shorter", "no-scheme", "basic", "access-token", "wrong-name"],
)
def test_the_control_plane_wants_the_token_in_its_header(
    server: Server, headers: dict[str, str]
) -> None:
    before = _sessions(server)
    for method, path in (("POST", "/sandboxes"), ("POST", "/v2/sandboxes"), ("GET", "/sandboxes")):
        response = httpx.request(
            method,
            server.url + path,
            json={"templateID": "base"},
            headers=headers,
            params={"token": KEY},  # a query token is the lmc WebSocket's, never this door's
            timeout=30,
        )
        assert response.status_code == 401, (path, response.text)
        assert response.json()["code"] == 401
    assert _sessions(server) == before


def test_a_web_page_is_refused_as_the_lmc_api_refuses_it(server: Server) -> None:
    """With the token (a page that was given it), a foreign Origin is still refused."""
    origin = {"Origin": "http://evil.example"}
    lmc = httpx.get(
        server.url + "/v1/sessions", headers={**origin, "Authorization": f"Bearer {KEY}"}
    )
    assert lmc.status_code == 403
    for method, path in (("GET", "/sandboxes"), ("POST", "/sandboxes"), ("GET", "/v2/sandboxes")):
        response = httpx.request(
            method,
            server.url + path,
            json={"templateID": "base"},
            headers={**origin, "X-API-Key": KEY},
            timeout=30,
        )
        assert response.status_code == 403, (path, response.text)
        assert response.json()["message"] == lmc.json()["error"]["message"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", f"api.{DOMAIN}.evil"])
def test_without_a_token_a_rebinding_host_is_refused(open_server: Server, host: str) -> None:
    """A page whose DNS name now resolves to 127.0.0.1 sends its own name as Host:
    it must neither list, nor create, nor reach a sandbox."""
    sandbox_id = create(open_server, key=None)["sandboxID"]
    try:
        listed = httpx.get(open_server.url + "/sandboxes", headers={"Host": host})
        assert listed.status_code == 403, listed.text
        assert sandbox_id not in listed.text
        made = httpx.post(
            open_server.url + "/sandboxes", json={"templateID": "base"}, headers={"Host": host}
        )
        assert made.status_code == 403, made.text
        reached = httpx.get(
            open_server.url + "/health", headers={"Host": host, "E2b-Sandbox-Id": sandbox_id}
        )
        assert reached.status_code == 403, reached.text
        foreign = httpx.get(open_server.url + "/sandboxes", headers={"Origin": f"http://{host}"})
        assert foreign.status_code == 403, foreign.text
    finally:
        assert kill(open_server, sandbox_id, key=None).status_code == 204


def test_without_a_token_the_servers_own_names_still_work(open_server: Server) -> None:
    for host in ("127.0.0.1", "localhost", f"api.{DOMAIN}", f"API.{DOMAIN.upper()}:443"):
        response = httpx.get(open_server.url + "/sandboxes", headers={"Host": host})
        assert response.status_code == 200, (host, response.text)


def test_a_huge_body_is_refused_before_it_is_read(server: Server) -> None:
    """The server's ``max_request_bytes`` (1 MiB) holds for the control plane,
    declared or streamed, with or without the token."""
    since = len(server.log())
    huge = b'{"templateID":"base","metadata":{"a":"' + b"x" * (64 << 20) + b'"}}'
    for key in (KEY, "wrong"):
        response = httpx.post(
            server.url + "/sandboxes",
            content=huge,
            headers={"X-API-Key": key, "Content-Type": "application/json"},
            timeout=60,
        )
        assert response.status_code == 413, response.text[:300]
        assert response.json()["code"] == 413

    def chunks() -> Iterator[bytes]:
        yield b'{"templateID":"base","metadata":{"a":"'
        for _ in range(64):
            yield b"x" * (1 << 20)
        yield b'"}}'

    streamed = httpx.post(
        server.url + "/sandboxes",
        content=chunks(),
        headers={"X-API-Key": KEY, "Content-Type": "application/json"},
        timeout=60,
    )
    assert streamed.status_code == 413, streamed.text[:300]
    _no_tracebacks(server, since)


def test_numbers_too_large_are_refused_or_clamped_never_a_500(server: Server) -> None:
    since = len(server.log())
    sandbox_id = create(server)["sandboxID"]
    headers = {"X-API-Key": KEY, "Content-Type": "application/json"}
    huge = "1" + "0" * 400
    try:
        for path, body in (
            (f"/sandboxes/{sandbox_id}/connect", f'{{"timeout": {huge}}}'),
            (f"/v2/sandboxes/{sandbox_id}/connect", f'{{"timeout": {huge}}}'),
            (f"/sandboxes/{sandbox_id}/refreshes", f'{{"duration": {huge}}}'),
            (f"/sandboxes/{sandbox_id}/timeout", f'{{"timeout": {huge}}}'),
            (f"/sandboxes/{sandbox_id}/timeout", '{"timeout": 1e400}'),
            ("/sandboxes", f'{{"templateID": "base", "timeout": {huge}}}'),
        ):
            response = httpx.post(server.url + path, content=body, headers=headers, timeout=60)
            assert response.status_code in (200, 201, 204, 400), (path, response.text)
            if response.status_code == 201:
                assert kill(server, response.json()["sandboxID"]).status_code == 204
        info = httpx.get(f"{server.url}/sandboxes/{sandbox_id}", headers={"X-API-Key": KEY})
        assert info.status_code == 200, info.text
    finally:
        kill(server, sandbox_id)
    _no_tracebacks(server, since)


@pytest.mark.parametrize(
    "body",
    [
        {"envVars": {f"V{i}": "x" for i in range(300)}},
        {"envVars": {"V": "x" * (200 << 10)}},
        {"envVars": {"LD_PRELOAD": "/tmp/x.so"}},
        {"metadata": {f"k{i}": "v" for i in range(1000)}},
        {"metadata": {"k": "v" * (100 << 10)}},
        {"metadata": {"k" * (10 << 10): "v"}},
        {"templateID": "t" * 10000},
        {"metadata": {"k": 1}},
    ],
    ids=[
        "many-env",
        "long-env",
        "loader-env",
        "many-meta",
        "long-value",
        "long-key",
        "template",
        "typed",
    ],
)
def test_metadata_and_env_are_bounded(server: Server, body: dict[str, object]) -> None:
    since = len(server.log())
    before = _sessions(server)
    response = httpx.post(
        server.url + "/sandboxes",
        json={"templateID": "base", **body},
        headers={"X-API-Key": KEY},
        timeout=60,
    )
    if response.status_code == 201:
        kill(server, response.json()["sandboxID"])
    assert response.status_code in (400, 404, 413), response.text[:300]
    assert response.json()["code"] == response.status_code
    assert len(response.text) < 4096  # the refusal does not echo what was sent
    assert _sessions(server) == before
    _no_tracebacks(server, since)


def test_a_flood_of_creates_is_refused_clearly_and_leaves_nothing(server: Server) -> None:
    """1,000 creates, 32 at a time, against room for 3: each is a 201 or a 429,
    never more sandboxes than room, and nothing is left once they are killed."""
    since = len(server.log())

    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
    with httpx.Client(base_url=server.url, headers={"X-API-Key": KEY}, limits=limits) as client:

        def one(_: int) -> tuple[int, str]:
            body = {"templateID": "base", "timeout": 300}
            response = client.post("/sandboxes", json=body, timeout=120)
            return response.status_code, response.text

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            answers = list(pool.map(one, range(1000)))
        took = time.monotonic() - started
    made = [json.loads(text)["sandboxID"] for status, text in answers if status == 201]
    refused = [text for status, text in answers if status == 429]
    assert len(made) + len(refused) == 1000, {s for s, _ in answers}
    assert 1 <= len(made) <= 3
    assert all(json.loads(text)["code"] == 429 for text in refused)
    assert took < 120, f"1,000 creates took {took:.0f} s"
    listed = httpx.get(server.url + "/sandboxes", headers={"X-API-Key": KEY}).json()
    assert sorted(s["sandboxID"] for s in listed) == sorted(made)
    for sandbox_id in made:
        assert kill(server, sandbox_id).status_code == 204
    assert _sessions(server) == 0
    assert httpx.get(server.url + "/sandboxes", headers={"X-API-Key": KEY}).json() == []
    _no_tracebacks(server, since)


def test_a_header_the_protocol_cannot_parse_is_a_400(server: Server) -> None:
    answer = raw_request(
        server,
        b"POST /sandboxes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999999999999999\r\n",
    )
    assert status_of(answer) in (400, 413), answer[:300]
