"""A session's egress policy that asks for more than the server's ceiling is
refused with 403, and a malformed one with 400: never a 500, never a session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.internet import ALLOWED, OTHER, WILD
from tests.integration.service.server import Server

from .harness import ROOT, serve_as

CEILING = f"{ALLOWED},{OTHER},*.{WILD},11.203.0.0/24"


@pytest.fixture(scope="module")
def guarded_server() -> Iterator[Server]:
    with serve_as(ROOT, "--allow-network", CEILING, "--pool-size", "0") as server:
        yield server


@pytest.mark.parametrize(
    "network",
    [{"allow": ["deb.debian.org"]}, {"allow": ["*.test"]}, {"allow": [ALLOWED, "10.0.0.0/8"]}],
)
def test_a_policy_beyond_the_ceiling_is_refused(guarded_server: Server, network: object) -> None:
    with guarded_server.client() as client:
        response = client.post("/v1/sessions", json={"network": network})
    assert response.status_code == 403, response.text
    assert response.json()["error"]["message"], response.text


@pytest.mark.parametrize(
    "network",
    [
        {"allow": ALLOWED},
        {"allow": [42]},
        {"allow": ["exa mple.test"]},
        {"allow": ["10.0.0.0/33"]},
        {"allow": [f"{ALLOWED}:99999"]},
        {"allow": [ALLOWED], "unknown": []},
        "everything",
    ],
)
def test_a_malformed_policy_is_refused(guarded_server: Server, network: object) -> None:
    with guarded_server.client() as client:
        response = client.post("/v1/sessions", json={"network": network})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"], response.text
