"""Attacks on the E2B door's sandbox traffic (what the SDKs send to envd and the
code interpreter with ``E2b-Sandbox-Id``/``E2b-Sandbox-Port``, or to
``<port>-<id>.<domain>``): a secure sandbox without its access token, headers
smuggled twice or disagreeing with the Host, ports outside the table, names
bent out of shape, WebSockets."""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.service.server import Server

from .e2b_door import (
    DOMAIN,
    ENVD,
    INTERPRETER,
    KEY,
    create,
    door_server,
    kill,
    raw_request,
    status_of,
    traffic,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)

#: A path the router guards (only /health is open to all) and no app of the
#: sandbox has: what passes the router is a 404.
GUARDED = "/lmc-probe"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with door_server("--max-sessions", "4") as server:
        yield server


@pytest.fixture(scope="module")
def secure(server: Server) -> Iterator[dict[str, str]]:
    """A sandbox made with ``secure=True``: its id and access token."""
    created = create(server, secure=True)
    assert created["envdAccessToken"]
    yield {"id": created["sandboxID"], "token": created["envdAccessToken"]}
    kill(server, created["sandboxID"])


@pytest.fixture(scope="module")
def plain(server: Server) -> Iterator[str]:
    sandbox_id = str(create(server)["sandboxID"])
    yield sandbox_id
    kill(server, sandbox_id)


def _passed_router(response: httpx.Response) -> bool:
    """Whether the router let the request through to the sandbox's service (its
    refusals are 400, 401, 403 and 502)."""
    return response.status_code not in (400, 401, 403, 502)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-Access-Token": "x" * 43},
        {"X-Access-Token": ""},
        {"X-Access-Token": KEY},
        {"X-API-Key": KEY},
        {"Authorization": f"Bearer {KEY}"},
    ],
    ids=["none", "wrong", "empty", "api-key-as-token", "api-key", "bearer"],
)
@pytest.mark.parametrize("port", [ENVD, INTERPRETER])
def test_a_secure_sandbox_wants_its_access_token(
    server: Server, secure: dict[str, str], headers: dict[str, str], port: int
) -> None:
    for method in ("GET", "POST"):
        response = traffic(server, secure["id"], GUARDED, port=port, method=method, headers=headers)
        assert response.status_code == 401, response.text
        assert response.json()["code"] == 401
    right = traffic(
        server, secure["id"], GUARDED, port=port, headers={"X-Access-Token": secure["token"]}
    )
    assert _passed_router(right), right.text


def test_another_sandboxs_token_does_not_open_it(server: Server, secure: dict[str, str]) -> None:
    other = create(server, secure=True)
    try:
        response = traffic(
            server, secure["id"], GUARDED, headers={"X-Access-Token": other["envdAccessToken"]}
        )
        assert response.status_code == 401
    finally:
        kill(server, other["sandboxID"])


def test_ids_near_a_real_one_reach_nothing(server: Server, plain: str) -> None:
    for near in (
        plain + "a",
        plain[:-1],
        plain.upper(),
        plain[:-1] + ("a" if plain[-1] != "a" else "b"),
        plain + "/",
        f"{plain},{plain}",
        "",
    ):
        response = traffic(server, near, GUARDED)
        assert response.status_code in (400, 502), (near, response.text)
        assert plain not in response.text
    assert _passed_router(traffic(server, plain, GUARDED))


def test_ids_with_padding_or_other_bytes_reach_nothing(server: Server, plain: str) -> None:
    head = f"GET {GUARDED} HTTP/1.1\r\nHost: 127.0.0.1\r\nE2b-Sandbox-Port: {ENVD}\r\n"
    for value in (
        plain.encode() + b"\xc2\xa0",  # a no-break space after it
        b"\xef\xbb\xbf" + plain.encode(),  # a byte-order mark before it
        plain.encode() + b"\x00",
        plain.encode() + b"\t\x0b",
        ("\u0430" + plain[1:]).encode(),  # a Cyrillic look-alike first
    ):
        answer = raw_request(server, head.encode() + b"E2b-Sandbox-Id: " + value + b"\r\n")
        assert status_of(answer) in (400, 502), answer[:300]


def test_two_sandbox_headers_that_disagree_are_refused(server: Server, plain: str) -> None:
    other = "a" * 32
    for pair in ((plain, other), (other, plain)):
        head = f"GET {GUARDED} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        head += "".join(f"E2b-Sandbox-Id: {value}\r\n" for value in pair)
        assert status_of(raw_request(server, head.encode())) == 400
    mixed_case = f"GET {GUARDED} HTTP/1.1\r\nHost: 127.0.0.1\r\nE2B-SANDBOX-ID: {plain}\r\ne2b-sandbox-id: {other}\r\n"
    assert status_of(raw_request(server, mixed_case.encode())) == 400
    ports = f"GET {GUARDED} HTTP/1.1\r\nHost: 127.0.0.1\r\nE2b-Sandbox-Id: {plain}\r\nE2b-Sandbox-Port: {INTERPRETER}\r\nE2b-Sandbox-Port: {ENVD}\r\n"
    assert status_of(raw_request(server, ports.encode())) == 400
    same = f"GET {GUARDED} HTTP/1.1\r\nHost: 127.0.0.1\r\nE2b-Sandbox-Id: {plain}\r\nE2B-Sandbox-Id: {plain}\r\n"
    assert status_of(raw_request(server, same.encode())) not in (0, 400, 401, 403, 500, 502)


@pytest.mark.parametrize(
    "port", ["22", "0", "99999", "-1", "+49983", " 49983x", "4998\u00b3", "\u00b2", "049983", "1e3"]
)
def test_a_port_outside_the_table_is_refused_cleanly(server: Server, plain: str, port: str) -> None:
    head = f"GET {GUARDED} HTTP/1.1\r\nHost: 127.0.0.1\r\nE2b-Sandbox-Id: {plain}\r\n"
    answer = raw_request(
        server, head.encode() + b"E2b-Sandbox-Port: " + port.encode("latin-1") + b"\r\n"
    )
    assert status_of(answer) in (400, 502), answer[:300]
    assert b'"code"' in answer
    log = server.log()
    assert "Traceback" not in log, log[-3000:]


def _by_host(server: Server, host: str, path: str = GUARDED, **headers: str) -> httpx.Response:
    return httpx.get(server.url + path, headers={"Host": host, **headers}, timeout=30)


def test_host_names_route_only_the_servers_own_domain(
    server: Server, secure: dict[str, str]
) -> None:
    sandbox_id, token = secure["id"], secure["token"]
    with_token = {"X-Access-Token": token}
    for host in (
        f"{ENVD}-{sandbox_id}.{DOMAIN}",
        f"{ENVD}-{sandbox_id}.{DOMAIN.upper()}",
        f"{ENVD}-{sandbox_id}.{DOMAIN}.",
        f"{ENVD}-{sandbox_id}.{DOMAIN}:443",
    ):
        assert _passed_router(_by_host(server, host, **with_token)), host
        assert _by_host(server, host).status_code == 401, host
    for host in (
        f"{ENVD}-{sandbox_id}.{DOMAIN}.evil",
        f"{ENVD}-{sandbox_id}.evil.{DOMAIN}",
        f"{ENVD}-{sandbox_id}x.{DOMAIN}",
        f"{ENVD}{sandbox_id}.{DOMAIN}",
    ):
        response = _by_host(server, host, **with_token)
        assert response.status_code in (401, 404, 502), (host, response.text)
    assert _by_host(server, f"22-{sandbox_id}.{DOMAIN}", **with_token).status_code == 502


def test_a_host_and_headers_that_disagree_are_refused(
    server: Server, secure: dict[str, str], plain: str
) -> None:
    token = {"X-Access-Token": secure["token"]}
    cases = [
        # the Host names the secure sandbox, the header a plain one (no token needed there)
        (f"{ENVD}-{secure['id']}.{DOMAIN}", {"E2b-Sandbox-Id": plain}),
        (f"{ENVD}-{plain}.{DOMAIN}", {"E2b-Sandbox-Id": secure["id"], **token}),
        (
            f"{ENVD}-{secure['id']}.{DOMAIN}",
            {"E2b-Sandbox-Id": secure["id"], "E2b-Sandbox-Port": str(INTERPRETER), **token},
        ),
        (f"{INTERPRETER}-{plain}.{DOMAIN}", {"E2b-Sandbox-Port": str(ENVD)}),
    ]
    for host, headers in cases:
        response = _by_host(server, host, **headers)
        assert response.status_code == 400, (host, headers, response.text)
    agreeing = _by_host(
        server,
        f"{INTERPRETER}-{secure['id']}.{DOMAIN}",
        **{"E2b-Sandbox-Id": secure["id"], "E2b-Sandbox-Port": str(INTERPRETER), **token},
    )
    assert _passed_router(agreeing), agreeing.text


def _websocket(server: Server, headers: dict[str, str]) -> int:
    head = (
        "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    )
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return status_of(raw_request(server, head.encode(), wait=10))


def test_a_websocket_to_sandbox_traffic_is_refused_cleanly(
    server: Server, secure: dict[str, str], plain: str
) -> None:
    for headers in (
        {"E2b-Sandbox-Id": "a" * 32},
        {"E2b-Sandbox-Id": secure["id"]},
        {"E2b-Sandbox-Id": secure["id"], "X-Access-Token": secure["token"]},
        {"E2b-Sandbox-Id": plain, "E2b-Sandbox-Port": "22"},
        {"E2b-Sandbox-Id": plain},
    ):
        status = _websocket(server, headers)
        assert status in (400, 401, 403, 404, 502), (headers, status)
    log = server.log()
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]


@pytest.mark.parametrize(
    ("port", "path", "kind"),
    [
        (INTERPRETER, "/execute", "application/json"),
        (INTERPRETER, "/contexts", "application/json"),
        (ENVD, "/filesystem.Filesystem/Stat", "application/json"),
        (ENVD, "/process.Process/Start", "application/connect+json"),
    ],
)
def test_a_huge_body_to_a_sandbox_is_refused(
    server: Server, plain: str, port: int, path: str, kind: str
) -> None:
    since = len(server.log())
    huge = b'{"code": "' + b"x" * (64 << 20) + b'"}'
    if kind == "application/connect+json":
        huge = (0).to_bytes(1, "big") + len(huge).to_bytes(4, "big") + huge
    try:
        response = traffic(
            server,
            plain,
            path,
            port=port,
            method="POST",
            content=huge,
            headers={"Content-Type": kind},
        )
        status, answer = response.status_code, response.content
    except httpx.TransportError:  # refused and closed while the body was still being sent
        status, answer = 413, b""
    if kind == "application/connect+json" and status == 200:  # a stream's error ends it
        assert b"resource_exhausted" in answer, answer[:300]
    else:
        assert 400 <= status < 500, (status, answer[:300])
    log = server.log()[since:]
    assert "Traceback" not in log, log[-3000:]


def test_a_planted_page_is_downloaded_never_rendered(server: Server, plain: str) -> None:
    """A page the code writes, fetched at ``<port>-<id>.<domain>``, would run its
    script in the sandbox's origin: it is sent as an attachment of bytes."""
    page = b"<html><script>fetch('https://api.e2b.test/sandboxes')</script></html>"
    uploaded = traffic(
        server,
        plain,
        "/files",
        method="POST",
        params={"path": "/home/user/page.html"},
        files={"file": ("page.html", page)},
    )
    assert uploaded.status_code == 200, uploaded.text
    got = _by_host(server, f"{ENVD}-{plain}.{DOMAIN}", "/files?path=/home/user/page.html")
    assert got.status_code == 200 and got.content == page
    assert got.headers["content-type"].startswith("application/octet-stream")
    assert got.headers["content-disposition"].startswith("attachment")


def _signature(path: str, operation: str, token: str, expiration: int | None) -> str:
    """E2B's v1 signature of a files URL (``Sandbox.download_url``)."""
    raw = f"{path}:{operation}:user:{token}" + (f":{expiration}" if expiration else "")
    digest = hashlib.sha256(raw.encode()).digest()
    return "v1_" + base64.b64encode(digest).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "expiration",
    ["%C2%B2", "%D9%A3", "9" * 5000, "-1", "1e9", "%20" + "9" * 12],
    ids=["superscript", "arabic-digit", "5000-digits", "negative", "float", "padded"],
)
def test_a_signed_url_with_a_strange_expiration_is_a_401(
    server: Server, secure: dict[str, str], expiration: str
) -> None:
    since = len(server.log())
    query = f"path=/home/user/x&username=user&signature=v1_x&signature_expiration={expiration}"
    response = httpx.get(f"{server.url}/files?{query}", timeout=30)
    assert response.status_code == 401, response.text[:300]
    log = server.log()[since:]
    assert "Traceback" not in log, log[-3000:]


def test_a_url_signature_never_reaches_the_log(server: Server, secure: dict[str, str]) -> None:
    path = "/home/user/signed.txt"
    put = traffic(
        server,
        secure["id"],
        "/files",
        method="POST",
        params={"path": path},
        files={"file": ("signed.txt", b"signed")},
        headers={"X-Access-Token": secure["token"]},
    )
    assert put.status_code == 200, put.text
    expiration = int(time.time()) + 300
    signature = _signature(path, "read", secure["token"], expiration)
    params = {
        "path": path,
        "username": "user",
        "signature": signature,
        "signature_expiration": str(expiration),
    }
    got = httpx.get(server.url + "/files", params=params, timeout=30)
    assert got.status_code == 200 and got.content == b"signed", got.text[:300]
    quoted = signature.replace("+", "%2B").replace("/", "%2F")
    wait_until(lambda: '"GET /files?' in server.log(), 10, "the download is in the access log")
    log = server.log()
    assert signature not in log and quoted not in log, log[-3000:]
