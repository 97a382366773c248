"""PostgreSQL that goes away and comes back under ``lmc serve --store``.

While it is down, runs go on and each says its messages are held; once it is
back they are written, in order, before the next ones. The gateway going away
and coming back is ``tests/integration/gateway/test_losses.py::test_a_gateway_stopped_mid_run_then_started_again``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from lmc_runtime.sandbox import sandbox_available

from ...postgres_cluster import PostgresCluster
from ..service.server import Server, final_status, output, running_server
from .clients import stream_until
from .transcripts import held_notices, run_until_stored, stored_runs


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    """A cluster of this module's own: it is crashed and started again."""
    reason = PostgresCluster.unavailable()
    if reason is not None:
        pytest.skip(reason)
    with PostgresCluster() as made:
        yield made


@pytest.fixture(scope="module")
def server(cluster: PostgresCluster) -> Iterator[Server]:
    availability = sandbox_available()
    assert availability.available, f"lmc serve needs bubblewrap: {availability.reason}"
    args = ("--pool-size", "0", "--max-sessions", "2", "--store", cluster.url)
    with running_server(*args) as running:
        yield running


#: Prints, waits a moment (the database crashes then), prints again.
SPANNING = "import time\nprint('started', flush=True)\ntime.sleep(0.5)\nprint('ended')"


def test_runs_go_on_while_postgres_is_down_and_are_stored_once_it_is_back(
    cluster: PostgresCluster, server: Server
) -> None:
    """Guards against runs lost without a word while the database is down."""
    from lmc_runtime.store import PostgresThreadStore

    sid = server.create(title="outage")
    assert held_notices(server.execute(sid, "print('before')")) == []
    with server.client() as client:
        response, rest = stream_until(client, sid, SPANNING, "started")
        started = time.monotonic()
        cluster.kill()  # a crash, in the middle of the run
        spanning = [json.loads(line) for line in rest if line]
        response.close()
    assert final_status(spanning) == "ok" and "ended\n" in output(spanning), spanning
    (notice,) = held_notices(spanning)
    assert "lmc-threads" in notice["content"] or "127.0.0.1" in notice["content"], notice
    assert time.monotonic() - started < 20, "the run waited too long for the database"
    during = server.execute(sid, "print('during')")
    assert output(during).startswith("during\n") and held_notices(during), during
    # A session made while the database is down works; its thread is made later.
    later = server.create(title="made while down")
    assert held_notices(server.execute(later, "print('new')")), "the new run was not held"

    cluster.start()
    runs = run_until_stored(server, sid, "back")
    store = PostgresThreadStore(cluster.url)
    try:
        expected = ["print('before')", SPANNING, "print('during')"]
        expected += [f"print('back-{n}')" for n in range(1, runs + 1)]
        assert stored_runs(store, sid) == expected
        said = "".join(str(m.content) for m in store.messages(sid) if m.format == "output")
        assert said.count("during\n") == 1 and "ended\n" in said, said
        assert store.get(later).title == "made while down"
        assert stored_runs(store, later) == ["print('new')"]
    finally:
        store.close()
