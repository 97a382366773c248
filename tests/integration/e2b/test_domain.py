"""``lmc serve --e2b-domain``: requests are routed by their host name,
``api.<domain>`` to the control plane and ``<port>-<sandbox id>.<domain>`` to a
sandbox, as E2B's SDKs send them with ``E2B_DOMAIN``; the host matching
straight against the server, then E2B's SDK through nginx with TLS, configured
by ``examples/deploy/nginx-e2b.conf``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.e2b.conftest import E2B_TOKEN
from tests.integration.service.server import Server, running_server

pytestmark = pytest.mark.timeout(240)

DOMAIN = "lmc.test"


@pytest.fixture(scope="module")
def domain_server() -> Iterator[Server]:
    with running_server("--pool-size", "1", "--e2b-domain", DOMAIN, token=E2B_TOKEN) as server:
        yield server


def _at(server: Server, host: str, method: str, path: str, **kwargs: object) -> httpx.Response:
    headers = {"Host": host, **kwargs.pop("headers", {})}  # type: ignore[dict-item]
    return httpx.request(method, server.url + path, headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def made(domain_server: Server) -> Iterator[dict[str, str]]:
    """A sandbox made through ``api.<domain>``; killed after."""
    answer = _at(
        domain_server,
        f"api.{DOMAIN}",
        "POST",
        "/sandboxes",
        headers={"X-API-Key": E2B_TOKEN},
        json={"templateID": "base", "timeout": 120},
    )
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["domain"] == DOMAIN
    try:
        yield body
    finally:
        _at(
            domain_server,
            f"api.{DOMAIN}",
            "DELETE",
            f"/sandboxes/{body['sandboxID']}",
            headers={"X-API-Key": E2B_TOKEN},
        )


def test_the_api_host_is_the_control_plane(domain_server: Server, made: dict[str, str]) -> None:
    got = _at(
        domain_server,
        f"api.{DOMAIN}:443",
        "GET",
        f"/sandboxes/{made['sandboxID']}",
        headers={"X-API-Key": E2B_TOKEN},
    )
    assert got.status_code == 200 and got.json()["sandboxID"] == made["sandboxID"]


def test_a_sandbox_host_reaches_its_envd_and_interpreter(
    domain_server: Server, made: dict[str, str]
) -> None:
    sid = made["sandboxID"]
    assert _at(domain_server, f"49983-{sid}.{DOMAIN}", "GET", "/health").status_code == 204
    assert _at(domain_server, f"49999-{sid}.{DOMAIN}", "GET", "/health").status_code == 200
    # A port nothing listens on, in E2B's words (502 from its proxy).
    closed = _at(domain_server, f"8080-{sid}.{DOMAIN}", "GET", "/health")
    assert closed.status_code == 502 and closed.json()["code"] == 502


def test_a_sandbox_host_never_reaches_the_lmc_api(
    domain_server: Server, made: dict[str, str]
) -> None:
    sid = made["sandboxID"]
    headers = {"Authorization": f"Bearer {E2B_TOKEN}"}
    answer = _at(domain_server, f"49983-{sid}.{DOMAIN}", "GET", "/v1/sessions", headers=headers)
    assert answer.status_code == 404
    assert "sessions" not in answer.json()


@pytest.mark.parametrize(
    "host",
    [
        "49983-{wrong}.lmc.test",  # no such sandbox
        "49983-{sid}x.lmc.test",  # one character more
    ],
)
def test_a_host_naming_no_sandbox_is_a_502(
    domain_server: Server, made: dict[str, str], host: str
) -> None:
    name = host.format(sid=made["sandboxID"], wrong="a" * 32)
    answer = _at(domain_server, name, "GET", "/health")
    assert answer.status_code == 502
    assert made["sandboxID"] not in answer.text


@pytest.mark.parametrize(
    "host",
    [
        "49983-{sid}.lmc.test.evil.example",  # the domain must end the name
        "49983-{sid}.evil.example",
        "x.49983-{sid}.lmc.test",
    ],
)
def test_a_host_outside_the_domain_is_not_sandbox_traffic(
    domain_server: Server, made: dict[str, str], host: str
) -> None:
    name = host.format(sid=made["sandboxID"])
    # lmc serve's own health check answered, not the sandbox's envd.
    answer = _at(domain_server, name, "GET", "/healthz")
    assert answer.status_code == 200 and "pool_ready" in answer.json()
    inside = _at(domain_server, f"49983-{made['sandboxID']}.{DOMAIN}", "GET", "/healthz")
    assert inside.status_code == 404 and "pool_ready" not in inside.text


def test_a_secure_sandboxs_host_needs_its_token(domain_server: Server) -> None:
    answer = _at(
        domain_server,
        f"api.{DOMAIN}",
        "POST",
        "/v2/sandboxes",
        headers={"X-API-Key": E2B_TOKEN},
        json={"templateID": "base", "timeout": 60},
    )
    assert answer.status_code == 201, answer.text
    sid, token = answer.json()["sandboxID"], answer.json()["envdAccessToken"]
    try:
        host = f"49983-{sid}.{DOMAIN}"
        body = {"path": "/home/user"}
        ctype = {"Content-Type": "application/json"}
        bare = _at(domain_server, host, "POST", "/filesystem.Filesystem/ListDir", json=body)
        assert bare.status_code == 401
        wrong = _at(
            domain_server,
            host,
            "POST",
            "/filesystem.Filesystem/ListDir",
            json=body,
            headers={**ctype, "X-Access-Token": token[:-1] + ("B" if token.endswith("A") else "A")},
        )
        assert wrong.status_code == 401
        right = _at(
            domain_server,
            host,
            "POST",
            "/filesystem.Filesystem/ListDir",
            json=body,
            headers={**ctype, "X-Access-Token": token, "Connect-Protocol-Version": "1"},
        )
        assert right.status_code == 200, right.text
    finally:
        _at(
            domain_server,
            f"api.{DOMAIN}",
            "DELETE",
            f"/sandboxes/{sid}",
            headers={"X-API-Key": E2B_TOKEN},
        )
