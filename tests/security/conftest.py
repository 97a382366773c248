"""Fixtures for the attack tests: a real ``lmc serve`` as root and as an
unprivileged user, with real bubblewrap."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmc_runtime.sandbox import sandbox_available
from tests.integration.egress.internet import internet

from .harness import ROOT, Account, temporary_account

__all__ = ["internet"]  # the egress tests' internet, a fixture


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def _bwrap_required() -> None:
    availability = sandbox_available()
    assert availability.available, f"these tests need bubblewrap: {availability.reason}"


@pytest.fixture(scope="module", params=["root", "user"])
def account(request: pytest.FixtureRequest) -> Iterator[Account]:
    """Whom the server runs as: root, then a throwaway unprivileged user."""
    if request.param == "root":
        yield ROOT
        return
    with temporary_account() as account:
        yield account
