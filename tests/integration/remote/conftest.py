"""A real ``lmc serve`` (with the sandbox) for the client SDK's tests, and clients of it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lmc_runtime.remote import RemoteComputer, Transport
from lmc_runtime.sandbox import sandbox_available

from ...closing import closing_all
from ..service.server import TOKEN, Server, running_server

#: Opens a RemoteComputer on the test server (keywords go to RemoteComputer).
RemoteFactory = Callable[..., RemoteComputer]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def _bwrap_required() -> None:
    availability = sandbox_available()
    assert availability.available, f"these tests need bubblewrap: {availability.reason}"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """``lmc serve`` with a token, the sandbox, a pool of one and up to 8 sessions."""
    with running_server("--pool-size", "1", "--max-sessions", "8") as running:
        yield running


@pytest.fixture(params=["http", "websocket"])
def transport(request: pytest.FixtureRequest) -> Transport:
    chosen: Transport = request.param
    return chosen


@pytest.fixture
def remote(server: Server) -> Iterator[RemoteFactory]:
    """Opens RemoteComputers on ``server`` (sync); closes them after the test."""

    def make(url: str | None = None, **kwargs: Any) -> RemoteComputer:
        kwargs.setdefault("token", TOKEN)
        computer = RemoteComputer(url or server.url, **kwargs)
        computer.__enter__()
        return computer

    with closing_all(make) as opened:
        yield opened


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
