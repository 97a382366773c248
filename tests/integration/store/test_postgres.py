"""PostgresThreadStore against a real server: two replica processes writing at
once, a writer killed with SIGKILL between and inside appends, replicas making
the schema at once, and a database that cannot be reached."""

from __future__ import annotations

import subprocess
import textwrap
import threading
from collections.abc import Callable, Iterator

import pytest

from lmc_runtime.errors import StoreError
from lmc_runtime.store import PostgresThreadStore, open_store

from ...postgres_cluster import PostgresCluster, free_port
from .writers import assert_acknowledged_prefix, killed_while_writing, read_line, start

pytestmark = pytest.mark.integration

#: A replica: its own store and pool; says "ready", waits for a line, then appends
#: `rounds` batches of two to the shared thread and to its own, and says "done".
REPLICA = textwrap.dedent(
    """
    import sys
    from lmc_runtime.messages import Message
    from lmc_runtime.store import PostgresThreadStore

    url, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = PostgresThreadStore(url, pool_size=4)
    def batch(r):
        return [Message(role="user", type="message", content=f"{name}:{r}:{part}")
                for part in "ab"]
    print("ready", flush=True)
    sys.stdin.readline()
    for r in range(rounds):
        store.append("shared", batch(r))
        store.append(f"own-{name}", batch(r))
    store.close()
    print("done", flush=True)
    """
)

#: Appends as fast as it can, saying after each append returned which it was.
BUSY_WRITER = textwrap.dedent(
    """
    import sys
    from lmc_runtime.messages import Message
    from lmc_runtime.store import PostgresThreadStore

    store = PostgresThreadStore(sys.argv[1])
    n = 0
    while True:
        content = f"{n}:" + "z" * 20000
        store.append("t1", [Message(role="user", type="message", content=content, id=f"b{n}")])
        print(n, flush=True)
        n += 1
    """
)


@pytest.fixture
def store(fresh_url: str) -> Iterator[PostgresThreadStore]:
    made = PostgresThreadStore(fresh_url)
    yield made
    made.close()


def test_two_replica_processes_appending_at_once_lose_nothing_and_keep_order(
    store: PostgresThreadStore, fresh_url: str
) -> None:
    rounds, names = 150, ("r1", "r2")
    for thread_id in ("shared", *(f"own-{name}" for name in names)):
        store.create(thread_id)
    replicas = [
        start(REPLICA, fresh_url, name, str(rounds), stdin=subprocess.PIPE) for name in names
    ]
    try:
        assert [read_line(p) for p in replicas] == ["ready", "ready"]
        for proc in replicas:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        assert [read_line(p, timeout=120) for p in replicas] == ["done", "done"]
    finally:
        for proc in replicas:
            proc.kill()
            proc.wait(timeout=30)
    shared = [m.content for m in store.messages("shared")]
    assert len(shared) == rounds * 2 * len(names)
    for name in names:
        expected = [f"{name}:{r}:{part}" for r in range(rounds) for part in "ab"]
        assert [c for c in shared if c.startswith(f"{name}:")] == expected
        assert [m.content for m in store.messages(f"own-{name}")] == expected
    for index in range(0, len(shared), 2):  # each batch stays together
        assert shared[index][:-1] + "b" == shared[index + 1]


def test_writer_killed_at_any_moment_keeps_every_acknowledged_append(
    store: PostgresThreadStore, fresh_url: str
) -> None:
    store.create("t1")
    acknowledged = killed_while_writing(BUSY_WRITER, fresh_url, acknowledgements=30)
    loaded = store.messages("t1")
    assert_acknowledged_prefix(loaded, acknowledged, 20000)
    # An append cut off by the kill was rolled back whole: the thread goes on in order.
    store.append("t1", [loaded[0].model_copy(update={"id": "after"})])
    assert [m.id for m in store.messages("t1")][-2:] == [loaded[-1].id, "after"]


def test_replicas_making_the_schema_at_once_all_open_the_store(
    postgres_cluster: PostgresCluster,
) -> None:
    # Regression: concurrent CREATE TABLE IF NOT EXISTS can fail on the catalog's
    # unique index; the advisory lock makes one replica make the schema, alone.
    url = postgres_cluster.create_database()
    count = 8
    barrier = threading.Barrier(count)
    stores: list[PostgresThreadStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        barrier.wait(timeout=60)
        try:
            stores.append(PostgresThreadStore(url, pool_size=1))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert errors == [] and len(stores) == count
        stores[0].create("t1")
        assert [t.id for t in stores[-1].list()] == ["t1"]
    finally:
        for made in stores:
            made.close()


def test_a_database_that_cannot_be_reached_is_a_store_error_without_the_password() -> None:
    port = free_port()
    url = f"postgresql://lmc:s3cret@127.0.0.1:{port}/lmc"
    openers: list[Callable[[], object]] = [
        lambda: PostgresThreadStore(url),
        lambda: open_store(url, "unused"),
    ]
    for opening in openers:
        with pytest.raises(StoreError) as caught:
            opening()
        text = str(caught.value)
        assert "s3cret" not in text and "\n" not in text
        assert f"postgresql://lmc@127.0.0.1:{port}/lmc" in text


def test_the_postgres_store_reads_what_another_store_instance_wrote(
    store: PostgresThreadStore, fresh_url: str
) -> None:
    store.create("t1", title="Shared", metadata={"replica": "a"})
    other = open_store(fresh_url, "unused")
    try:
        assert isinstance(other, PostgresThreadStore)
        assert other.get("t1").metadata == {"replica": "a"}
        other.append("t1", [])
        assert other.messages("t1") == []
    finally:
        other.close()
