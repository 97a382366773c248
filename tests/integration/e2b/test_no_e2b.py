"""``lmc serve --no-e2b``: the server does not speak E2B's API (its own API is
untouched, and E2B's paths are lmc's 404s)."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.service.server import running_server

from .conftest import E2B_TOKEN

pytestmark = pytest.mark.timeout(120)


def test_without_the_door_e2b_paths_are_not_served() -> None:
    with running_server("--no-e2b", "--pool-size", "0", token=E2B_TOKEN) as server:
        create = httpx.post(
            server.url + "/v2/sandboxes",
            json={"templateID": "base"},
            headers={"X-API-Key": E2B_TOKEN},
            timeout=30,
        )
        assert create.status_code == 404
        assert "error" in create.json()  # lmc's own shape, not E2B's
        routed = httpx.get(server.url + "/health", headers={"E2b-Sandbox-Id": "a" * 32}, timeout=30)
        assert routed.status_code == 404
        with server.client(E2B_TOKEN) as client:
            assert client.get("/v1/sessions").status_code == 200
