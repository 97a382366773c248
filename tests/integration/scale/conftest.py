"""Replicas of ``lmc serve`` behind HAProxy, shared by a module's tests."""

from __future__ import annotations

import shutil

import pytest

from lmc_runtime.sandbox import sandbox_available

from .cluster import HAPROXY


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def _haproxy_and_bwrap() -> None:
    if not shutil.which(HAPROXY):
        pytest.skip(f"HAProxy is not installed ({HAPROXY}): apt-get install haproxy")
    availability = sandbox_available()
    assert availability.available, f"these tests need bubblewrap: {availability.reason}"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
