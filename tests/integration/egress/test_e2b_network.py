"""E2B's network options through the door of a real ``lmc serve`` with a
ceiling: allowOut under denyOut 0.0.0.0/0 becomes the session's egress policy,
an entry beyond the ceiling is refused (403), an allowed address inside a
denied network (which E2B would let through) is refused (400)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from benchmarks.internet import ALLOWED, TestInternet
from lmc_runtime.sandbox import sandbox_available
from tests.integration.service.server import TOKEN, Server

from .internet import policy_server

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not sandbox_available().available, reason="needs bubblewrap"),
]


@pytest.fixture(scope="module")
def server(internet: TestInternet) -> Iterator[Server]:
    with policy_server(internet, "--pool-size", "0", "--e2b-domain", "e2b.test") as running:
        yield running


def _create(server: Server, **body: Any) -> httpx.Response:
    body = {"templateID": "base", "timeout": 120, **body}
    headers = {"X-API-Key": TOKEN}
    return httpx.post(server.url + "/sandboxes", json=body, headers=headers, timeout=120)


def test_allow_out_under_a_denied_internet_is_the_sessions_policy(server: Server) -> None:
    network = {"allowOut": [ALLOWED], "denyOut": ["0.0.0.0/0"]}
    response = _create(server, network=network)
    assert response.status_code == 201, response.text
    sandbox = response.json()["sandboxID"]
    try:
        with server.client() as client:
            sessions = client.get("/v1/sessions").json()["sessions"]
        assert [s["network"] for s in sessions] == [{"allow": [ALLOWED], "deny": []}]
    finally:
        httpx.delete(f"{server.url}/sandboxes/{sandbox}", headers={"X-API-Key": TOKEN}, timeout=60)


@pytest.mark.parametrize(
    ("network", "status"),
    [
        ({"allowOut": ["pypi.org"], "denyOut": ["0.0.0.0/0"]}, 403),
        ({"allowOut": ["10.1.2.3"], "denyOut": ["10.0.0.0/8"]}, 400),
    ],
)
def test_e2b_network_options_the_server_cannot_honour_are_refused(
    server: Server, network: dict[str, list[str]], status: int
) -> None:
    response = _create(server, network=network)
    assert response.status_code == status, response.text
