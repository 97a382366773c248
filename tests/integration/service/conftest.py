"""A shared ``lmc serve`` (real bwrap) for the service's integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmc_runtime.sandbox import sandbox_available

from .server import Server, running_server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def _bwrap_required() -> None:
    availability = sandbox_available()
    assert availability.available, f"these tests need bubblewrap: {availability.reason}"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """``lmc serve`` with a token, the sandbox, a pool of one and at most 4 sessions.

    Shared by a module's tests on purpose: each test makes sessions of its own,
    and one server serving them all is how it runs (starting one takes seconds).
    """
    with running_server("--pool-size", "1", "--max-sessions", "4") as running:
        yield running
