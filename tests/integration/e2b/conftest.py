"""E2B's own SDKs against a real ``lmc serve``, pointed at it by their
environment variables alone (``E2B_API_URL``, ``E2B_SANDBOX_URL``,
``E2B_API_KEY``), as a user of E2B would point them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.service.server import Server, running_server

#: The server's token, in the shape E2B's SDKs check a key for.
E2B_TOKEN = "e2b_" + "0123456789abcdef" * 2 + "01234567"


@pytest.fixture(scope="module")
def e2b_server() -> Iterator[Server]:
    with running_server("--pool-size", "1", token=E2B_TOKEN) as server:
        yield server


@pytest.fixture
def e2b_env(e2b_server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    """The SDKs' environment pointed at ``e2b_server``."""
    monkeypatch.setenv("E2B_API_KEY", E2B_TOKEN)
    monkeypatch.setenv("E2B_API_URL", e2b_server.url)
    monkeypatch.setenv("E2B_SANDBOX_URL", e2b_server.url)
    monkeypatch.delenv("E2B_DOMAIN", raising=False)
    monkeypatch.delenv("E2B_ACCESS_TOKEN", raising=False)
    return e2b_server


@pytest.fixture
def sandbox(e2b_env: Server) -> Iterator[object]:
    """A code-interpreter sandbox of ``e2b_server``, killed after the test."""
    from e2b_code_interpreter import Sandbox

    sbx = Sandbox.create(timeout=120)
    try:
        yield sbx
    finally:
        sbx.kill()
