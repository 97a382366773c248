"""The execute route's hot path answers every refusal as the FastAPI route it
stands in for does: same status, same code, same words."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.routing import Route

from lmc_runtime.service import ServiceSettings, create_app
from lmc_runtime.service.hot import EXECUTE_PATH

TOKEN = "unit-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CODE = {"role": "assistant", "type": "code", "format": "python", "content": "print(1)"}


@pytest.fixture
def app() -> Iterator[FastAPI]:
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        settings = ServiceSettings(data_dir=Path(tmp), token=TOKEN, pool_size=0, sandbox=False)
        yield create_app(settings)


def test_the_hot_route_comes_first(app: FastAPI) -> None:
    first = app.router.routes[0]
    assert isinstance(first, Route) and first.path == EXECUTE_PATH
    assert first.methods == {"POST"}
    # The operation is still in the document, from the FastAPI route.
    assert "post" in app.openapi()["paths"][EXECUTE_PATH]


def _answers(client: TestClient, session_id: str) -> list[tuple[int, Any]]:
    path = EXECUTE_PATH.format(session_id=session_id)
    requests: list[tuple[str, dict[str, str], Any]] = [
        (path, {}, CODE),  # no token
        (path, {"Authorization": "Bearer wrong"}, CODE),
        ("/v1/sessions/nope/execute", AUTH, CODE),
        (f"{path}?timeout=0", AUTH, CODE),
        (f"{path}?timeout=-1", AUTH, CODE),
        (f"{path}?timeout=soon", AUTH, CODE),
        (path, AUTH, {"role": "assistant", "type": "code"}),  # no format
        (path, AUTH, ["not", "a", "message"]),
    ]
    answers = []
    for url, headers, body in requests:
        response = client.post(url, headers=headers, json=body)
        answers.append((response.status_code, response.json()))
    bad_json = client.post(path, headers={**AUTH, "content-type": "application/json"}, content=b"{")
    answers.append((bad_json.status_code, bad_json.json()))
    return answers


def test_refusals_match_the_fastapi_route(app: FastAPI) -> None:
    with TestClient(app) as client:
        session_id = client.post("/v1/sessions", headers=AUTH, json={}).json()["id"]
        hot = _answers(client, session_id)
        app.router.routes.pop(0)  # the FastAPI route answers now
        declared = _answers(client, session_id)
    assert hot == declared
    statuses = [status for status, _ in hot]
    assert statuses == [401, 401, 404, 400, 400, 400, 400, 400, 400]
    assert "timeout" in hot[3][1]["error"]["message"]
