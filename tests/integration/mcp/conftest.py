"""One ``lmc mcp --http`` shared by the MCP tests that need one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .client import HttpServer


@pytest.fixture(scope="session")
def server() -> Iterator[HttpServer]:
    """Every client of it gets an MCP session, and a computer, of its own."""
    from .client import http_server  # the SDK, which the test modules skip without

    with http_server() as running:
        yield running
