"""The egress tests' "internet" (see :mod:`benchmarks.internet`) as a pytest
fixture, and ``lmc serve`` with an egress ceiling over it.

Import ``internet`` into a ``conftest.py`` to use it. It is made once per test
run, and removed at its end; namespaces a dead run left are removed first.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from benchmarks.internet import TestInternet, netns_problem
from tests.integration.service.server import Server
from tests.security.harness import ROOT, Account, serve_as

__all__ = ["internet", "open_tun", "policy_server"]

TUN = Path("/dev/net/tun")


@pytest.fixture(scope="session")
def internet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestInternet]:
    """The test internet, or a skip saying why it cannot be made here."""
    problem = netns_problem()
    if problem is not None:
        pytest.skip(problem)
    world = TestInternet(tmp_path_factory.mktemp("internet")).start()
    try:
        yield world
    finally:
        world.stop()


@contextmanager
def policy_server(world: TestInternet, *args: str, account: Account = ROOT) -> Iterator[Server]:
    """``lmc serve`` (as ``account``) whose ceiling is the test internet's names
    and subnet, resolving them through its DNS server."""
    ceiling = ("--allow-network", world.ceiling, "--egress-dns", world.dns)
    with serve_as(account, *ceiling, *args) as server:
        yield server


@contextmanager
def open_tun() -> Iterator[None]:
    """/dev/net/tun usable by the sandboxes' users (as Debian's udev rule makes
    it, 0666), for ``network: true`` sessions; the mode it had is restored after."""
    mode = stat.S_IMODE(TUN.stat().st_mode)
    os.chmod(TUN, 0o666)
    try:
        yield
    finally:
        os.chmod(TUN, mode)
