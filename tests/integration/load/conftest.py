"""A real ``lmc serve`` (real bwrap) of its own for each load and leak test,
with a replica name and a temporary folder that only it uses, so that its
census counts its cgroups and temporary files and no one else's."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from lmc_runtime.sandbox import sandbox_available

from ..service.server import running_server
from .census import Served


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def _bwrap_required() -> None:
    availability = sandbox_available()
    assert availability.available, f"these tests need bubblewrap: {availability.reason}"


@contextmanager
def _serve(*args: str) -> Iterator[Served]:
    replica = "ld" + secrets.token_hex(3)
    with tempfile.TemporaryDirectory(prefix="lmc-tmp-") as temp:
        os.chmod(temp, 0o711)
        env = {"TMPDIR": temp}
        with running_server(*args, "--replica", replica, env=env) as server:
            yield Served(server, replica, Path(temp))


@pytest.fixture
def serve() -> Callable[..., AbstractContextManager[Served]]:
    """``with serve(*args) as served:`` a server with ``args``, its own replica
    name and temporary folder."""
    return _serve
