"""One ``lmc serve`` for every service fuzz test (starting one takes seconds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..service.server import running_server
from .service import Target, target


@pytest.fixture(scope="package")
def fuzzed() -> Iterator[Target]:
    """A server without a pool (only the fuzzed sessions run), and one session on it."""
    with running_server("--pool-size", "0", "--max-sessions", "4") as server:
        yield from target(server)
