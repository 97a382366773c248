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


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"limits": {"memory_bytes": "lots"}}, "limits.memory_bytes: must be an integer"),
        ({"languages": "python"}, "languages: must be a JSON array"),
        ({"languages": [1]}, "languages[0]: must be a string"),
        ({"bogus": 1}, "bogus: is not a field of this request"),
        ({"limits": {"wall_seconds": -1}}, "limits.wall_seconds: must be at least 0.1"),
        ({"env": {"A": 1}}, "env.A: must be a string"),
        ([1], "the body: must be a JSON object"),
    ],
)
def test_a_400_for_a_bad_field_names_it_in_the_apis_own_words(
    client: TestClient, body: object, message: str
) -> None:
    """A body that does not validate is answered with the field's path and a short
    sentence: not pydantic's text, its URL, or the input echoed back."""
    answer = client.post("/v1/sessions", headers=AUTH, json=body)
    assert answer.status_code == 400
    assert answer.json()["error"] == {"code": "bad_request", "message": message}


def test_a_400_for_a_bad_query_parameter_names_it(client: TestClient) -> None:
    answer = client.post("/v1/sessions/abc/execute?timeout=soon", headers=AUTH, json={})
    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == "query parameter timeout: must be a number"


def test_a_400_from_the_files_api_names_the_field_in_the_apis_own_words(
    client: TestClient,
) -> None:
    """The files API's JSON bodies are answered as the sessions' are."""
    session_id = client.post("/v1/sessions", headers=AUTH, json={}).json()["id"]
    try:
        url = f"/v1/sessions/{session_id}/mkdir"
        wrong = client.post(url, headers=AUTH, json={"path": "p", "parents": "yes"})
        assert wrong.status_code == 400
        assert wrong.json()["error"]["message"] == "parents: must be true or false"
        missing = client.post(url, headers=AUTH, json={"parents": True})
        assert missing.json()["error"]["message"] == "path: is required"
    finally:
        client.delete(f"/v1/sessions/{session_id}", headers=AUTH)
