"""The node backend's availability, without starting node."""

from __future__ import annotations

import pytest

from lmc_runtime.backends.base import Backend
from lmc_runtime.backends.node import NodeBackend


def test_backend_satisfies_the_protocol() -> None:
    assert isinstance(NodeBackend(), Backend)


def test_missing_node_is_reported_with_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    availability = NodeBackend().availability()
    assert not availability.available
    assert "node is not installed" in (availability.reason or "")
    assert "apt-get install nodejs" in (availability.reason or "")
