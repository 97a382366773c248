"""The console's assets: each one served with the strict policy, every module
an import names present, and nothing in them that the policy or the XSS rules
forbid (inline script, eval, HTML parsing of strings)."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from lmc_runtime.console import CSP, console_router, page_policy

STATIC = resources.files("lmc_runtime.console").joinpath("static")
SCRIPTS = sorted(p.name for p in STATIC.iterdir() if p.name.endswith(".js"))


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    app.include_router(console_router())
    return TestClient(app)


def test_the_page_and_every_asset_carry_the_policy(client: TestClient) -> None:
    assert client.get("/ui", follow_redirects=False).status_code == 308
    for path in [f"/ui/static/{name}" for name in [*SCRIPTS, "console.css"]]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-security-policy"] == CSP
    assert client.get("/ui/static/routes.py").status_code == 404
    assert client.get("/ui/static/%2e%2e/routes.py").status_code == 404


def test_each_load_of_the_page_has_a_style_nonce_of_its_own(client: TestClient) -> None:
    nonces = []
    for _ in range(2):
        response = client.get("/ui/")
        found = re.search(r'<meta name="lmc-style-nonce" content="([\w-]{24})">', response.text)
        assert found is not None
        nonces.append(found.group(1))
        assert response.headers["content-security-policy"] == page_policy(found.group(1))
    assert nonces[0] != nonces[1]
    policy = page_policy(nonces[0])
    assert "script-src 'self';" in policy and "unsafe" not in policy


def test_the_page_has_no_inline_script_and_loads_only_its_own_files() -> None:
    html = STATIC.joinpath("index.html").read_text()
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert 'src="/ui/static/' in tag, tag
    assert "<script>" not in html and " style=" not in html
    assert not re.search(r"\son\w+\s*=", html, re.IGNORECASE)  # no inline handler
    for ref in re.findall(r'(?:src|href)="([^"#]+)"', html):
        assert ref.startswith("/ui/static/") and STATIC.joinpath(ref.rsplit("/", 1)[1]).is_file()


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_module_imports_only_files_that_ship_and_never_parses_html(name: str) -> None:
    source = STATIC.joinpath(name).read_text()
    for imported in re.findall(r'from "\./([\w.-]+)"', source):
        assert STATIC.joinpath(imported).is_file(), imported
    for banned in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
    ):
        assert banned not in source, f"{name} uses {banned}"
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("//"))
    assert "allow-same-origin" not in code


def test_assets_go_compressed_to_a_client_that_takes_gzip(client: TestClient) -> None:
    plain = client.get("/ui/static/codemirror.js", headers={"Accept-Encoding": "identity"})
    packed = client.get("/ui/static/codemirror.js", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in plain.headers
    assert packed.headers["content-encoding"] == "gzip"
    assert packed.content == plain.content  # httpx decoded it
    assert int(packed.headers["content-length"]) < len(plain.content) // 2
