"""Every thread store, through one fixture: the tests of this folder run on each.

PostgreSQL is of the integration tier: one cluster for the whole session (made
with Debian's PostgreSQL 15; skipped where it is not installed), a fresh
database for every test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lmc_runtime.store import JanThreadStore, SqliteThreadStore, ThreadStore

from ...closing import closing_all
from ...postgres_cluster import session_cluster

#: Opens another store on the same folder, file or database as ``store``.
Reopen = Callable[[], ThreadStore]


@pytest.fixture(
    params=["jan", "jan-group", "sqlite", pytest.param("postgres", marks=pytest.mark.integration)]
)
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Reopen]:
    if request.param == "postgres":
        from lmc_runtime.store import PostgresThreadStore

        url = session_cluster(request).create_schema()

    def make() -> ThreadStore:
        if request.param == "jan":
            made: ThreadStore = JanThreadStore(tmp_path / "jan")
        elif request.param == "jan-group":
            made = JanThreadStore(tmp_path / "jan", group_commit=True)
        elif request.param == "sqlite":
            made = SqliteThreadStore(tmp_path / "t.db")
        else:
            made = PostgresThreadStore(url)
        return made

    with closing_all(make) as reopen:
        yield reopen


@pytest.fixture
def store(reopen: Reopen) -> ThreadStore:
    return reopen()
