"""Fixtures for every tier: nothing a test file starts is left running after it."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from . import orphans

#: Processes started before this one (before the run) are not the tests'.
_RUN_START = orphans.own_start() if orphans.watched() else 0


@pytest.fixture(scope="module", autouse=True)
def _nothing_left_running(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test file, the orphans it left (see :mod:`tests.orphans`) are
    killed and named in a warning, with the file: the run's warnings summary
    says which file left what."""
    yield
    if not orphans.watched():
        return
    left = orphans.left_behind(_RUN_START)
    if left:
        named = "; ".join(str(orphan) for orphan in left)
        warnings.warn(
            orphans.LeftBehind(
                f"{request.node.nodeid} left {len(left)} process(es) running, "
                f"orphaned (killed): {named}"
            ),
            stacklevel=1,
        )
