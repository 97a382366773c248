"""The OpenAPI document: valid, every body typed, the token declared; /docs offline."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from openapi_spec_validator import validate

from lmc_runtime.service import ServiceSettings, create_app

TOKEN = "unit-token"
_METHODS = ("get", "put", "post", "delete", "patch")


@pytest.fixture
def app() -> Iterator[FastAPI]:
    """A new application: one lifespan each (its end shuts the service down)."""
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        settings = ServiceSettings(data_dir=Path(tmp), token=TOKEN, pool_size=0, sandbox=False)
        yield create_app(settings)


@pytest.fixture
def document(app: FastAPI) -> dict[str, Any]:
    return app.openapi()


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in _METHODS:
                yield path, method, operation


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    name = ref.removeprefix("#/components/schemas/")
    resolved = document["components"]["schemas"][name]
    assert isinstance(resolved, dict)
    return resolved


def test_the_document_is_valid_openapi(document: dict[str, Any]) -> None:
    validate(document)


def test_every_post_and_put_declares_its_body(document: dict[str, Any]) -> None:
    """Guards the bodies the routes read themselves (read_body, with its size limit):
    FastAPI cannot see them, so each is declared by hand."""
    checked = 0
    for path, method, operation in _operations(document):
        if method not in ("post", "put"):
            continue
        if path.endswith(("/interrupt", "/checkpoints", "/fork")):
            continue  # takes no body
        body = operation.get("requestBody")
        assert body is not None, f"{method.upper()} {path} declares no body"
        content = body["content"]
        if "/files/" in path:
            assert "application/octet-stream" in content, (path, content)
            continue
        schema = _resolve(document, content["application/json"]["schema"])
        assert schema.get("properties"), (path, schema)
        checked += 1
    assert checked >= 3


def test_the_session_bodies_have_their_fields(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert {"languages", "network", "limits", "title", "cwd", "env"} <= set(
        schemas["CreateSession"]["properties"]
    )
    code = schemas["CodeMessage"]["properties"]
    assert {"role", "type", "format", "content", "id", "extras"} <= set(code)
    assert "env" in schemas["CodeExtras"]["properties"]
    assert schemas["RestartRequest"]["properties"]["language"]["default"] == "python"
    assert {"cwd", "env", "title"} <= set(schemas["SessionInfo"]["properties"])
    language = schemas["LanguageInfo"]["properties"]
    assert {"name", "available", "reason", "aliases"} <= set(language)


def test_every_v1_route_declares_the_bearer_token(document: dict[str, Any]) -> None:
    scheme = document["components"]["securitySchemes"]["bearerAuth"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    v1 = [(p, m, op) for p, m, op in _operations(document) if p.startswith("/v1/")]
    assert len(v1) >= 9
    for path, method, operation in v1:
        assert {"bearerAuth": []} in operation.get("security", []), (method, path)
    assert "/v1/languages" in document["paths"]


def test_docs_are_served_from_this_server_without_a_token(app: FastAPI) -> None:
    with TestClient(app) as client:
        page = client.get("/docs")
        assert page.status_code == 200
        assert client.get("/openapi.json").status_code == 200
        assets = re.findall(r'(?:href|src)="([^"]+)"', page.text)
        assert len(assets) >= 3, page.text
        assert "http" not in page.text.lower().replace("http-equiv", "")
        for url in assets:
            assert url.startswith("/docs/assets/"), url
            response = client.get(url)
            assert response.status_code == 200 and response.content, url
        # FastAPI's own pages, which load from a CDN, are off.
        assert client.get("/redoc").status_code == 404


def test_metrics_need_the_token_unless_public(app: FastAPI) -> None:
    with TestClient(app) as client:
        assert client.get("/metrics").status_code == 401
        scraped = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert scraped.status_code == 200
        assert scraped.headers["content-type"].startswith("text/plain")
        assert 'lmc_sessions{state="idle"} 0.0' in scraped.text
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        settings = ServiceSettings(
            data_dir=Path(tmp), token=TOKEN, pool_size=0, sandbox=False, metrics_public=True
        )
        with TestClient(create_app(settings)) as client:
            assert client.get("/metrics").status_code == 200


def test_bad_session_options_are_refused(app: FastAPI) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(app) as client:
        for env in ({"1X": "a"}, {"A-B": "a"}, {"A": "a\x00b"}, {"LD_PRELOAD": "x.so"}, {"A": 1}):
            refused = client.post("/v1/sessions", headers=auth, json={"env": env})
            assert refused.status_code == 400, (env, refused.text)
            assert refused.json()["error"]["code"] == "bad_request"
        for cwd in ("../up", "/abs", "a//b", "./a", "a/../b"):
            refused = client.post("/v1/sessions", headers=auth, json={"cwd": cwd})
            assert refused.status_code == 400, (cwd, refused.text)
            assert refused.json()["error"]["code"] == "bad_path"
        languages = client.get("/v1/languages", headers=auth).json()["languages"]
        python = next(entry for entry in languages if entry["name"] == "python")
        assert python["available"] is True and "py" in python["aliases"]
        assert client.get("/v1/languages").status_code == 401
