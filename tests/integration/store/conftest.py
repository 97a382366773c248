"""The session's throwaway PostgreSQL cluster, for the stores' integration tests."""

from __future__ import annotations

import pytest

from ...postgres_cluster import PostgresCluster, session_cluster


@pytest.fixture(scope="session")
def postgres_cluster(request: pytest.FixtureRequest) -> PostgresCluster:
    """One cluster for the whole session (skips where PostgreSQL is not installed)."""
    return session_cluster(request)


@pytest.fixture(scope="session")
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """The URL of the session cluster's database (shared: tests use fresh thread ids)."""
    return postgres_cluster.url


@pytest.fixture
def fresh_url(postgres_cluster: PostgresCluster) -> str:
    """A URL of the session cluster whose tables start empty (a schema of its own)."""
    return postgres_cluster.create_schema()
