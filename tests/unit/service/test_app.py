"""The application without kernels: auth, errors as JSON, health, OpenAPI."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lmc_runtime.service import ServiceSettings, create_app

TOKEN = "unit-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client() -> Iterator[TestClient]:
    # Short: kernels' unix sockets would live under it.
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        settings = ServiceSettings(data_dir=Path(tmp), token=TOKEN, pool_size=0, sandbox=False)
        with TestClient(create_app(settings)) as test_client:
            yield test_client


def test_health_and_openapi(client: TestClient) -> None:
    health = client.get("/healthz").json()
    assert health == {"status": "ok", "sessions": 0, "pool_ready": 0, "transcripts_held": 0}
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/v1/sessions", "/v1/sessions/{session_id}/execute", "/healthz"):
        assert path in paths


def test_every_error_is_json_with_its_status(client: TestClient) -> None:
    unauthorized = client.get("/v1/sessions")
    assert unauthorized.status_code == 401
    assert unauthorized.json()["error"]["code"] == "unauthorized"
    assert unauthorized.headers["www-authenticate"] == "Bearer"
    missing = client.get("/v1/sessions/abc", headers=AUTH)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    bad = client.post("/v1/sessions", headers=AUTH, content=b"[1, 2")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "malformed"
    unknown = client.post("/v1/sessions", headers=AUTH, json={"languages": ["klingon"]})
    assert unknown.status_code == 400 and "klingon" in unknown.json()["error"]["message"]
    huge = client.post("/v1/sessions", headers=AUTH, content=b" " * (2 << 20))
    assert huge.status_code == 413
    assert client.get("/no/such/route").json()["error"]["code"] == "not_found"


def test_listing_starts_empty(client: TestClient) -> None:
    assert client.get("/v1/sessions", headers=AUTH).json() == {"sessions": []}
