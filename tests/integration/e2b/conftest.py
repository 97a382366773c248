"""E2B's own SDKs against a real ``lmc serve``, pointed at it by their
environment variables alone (``E2B_API_URL``, ``E2B_SANDBOX_URL``,
``E2B_API_KEY``), as a user of E2B would point them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.e2b.sdk_env import E2B_TOKEN, point_sdks_at, sdk_sandbox
from tests.integration.service.server import Server, running_server


@pytest.fixture(scope="module")
def e2b_server() -> Iterator[Server]:
    with running_server("--pool-size", "1", token=E2B_TOKEN) as server:
        yield server


@pytest.fixture
def e2b_env(e2b_server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    """The SDKs' environment pointed at ``e2b_server``."""
    return point_sdks_at(e2b_server, monkeypatch)


@pytest.fixture
def sandbox(e2b_env: Server) -> Iterator[object]:
    """A code-interpreter sandbox of ``e2b_server``, killed after the test."""
    from e2b_code_interpreter import Sandbox

    with sdk_sandbox(Sandbox) as sbx:
        yield sbx
