"""One ``lmc serve`` for the framework integrations' tests, shared by every module
that asks for it: each test's RemoteComputer makes a session of its own there."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..service.server import Server, running_server


@pytest.fixture(scope="session")
def lmc_server() -> Iterator[Server]:
    """``lmc serve`` with a token and the sandbox, no pool, at most 4 sessions."""
    with running_server("--pool-size", "0", "--max-sessions", "4") as running:
        yield running
