"""One ``lmc mcp --http`` shared by the MCP tests that need one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .client import HttpServer, http_server


@pytest.fixture(scope="session")
def server() -> Iterator[HttpServer]:
    """Every client of it gets an MCP session, and a computer, of its own."""
    with http_server() as running:
        yield running
