"""Thread stores after a crash and under contention: what a killed writer leaves
behind never blocks an id or breaks a listing, and a lock held elsewhere gives a
StoreError after a bounded wait instead of a raw sqlite3 error or a hang."""

from __future__ import annotations

import json
import selectors
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lmc_runtime.errors import StoreError, ThreadExists, ThreadNotFound
from lmc_runtime.messages import Message
from lmc_runtime.store import JanThreadStore, SqliteThreadStore

#: Every wait in these tests ends within this many seconds.
BOUND = 30.0


def say(text: str) -> Message:
    return Message(role="user", type="message", content=text)


def _jan_record(text: str) -> str:
    return json.dumps({"id": "old", "role": "user", "content": [{"type": "text", "text": text}]})


#: name -> files a crash (or a person) left in ``threads/t1/``; none of them is a thread.
LEFTOVERS: dict[str, dict[str, bytes]] = {
    "empty folder": {},
    "messages file only": {"messages.jsonl": b""},
    "messages but no thread.json": {"messages.jsonl": _jan_record("orphan").encode() + b"\n"},
    "temp file only": {".thread.json.4242.tmp": b'{"id": "t1", "title": "half"}'},
    "empty thread.json": {"thread.json": b"", "messages.jsonl": b""},
    "truncated thread.json": {"thread.json": b'{"id": "t1", "tit', "messages.jsonl": b""},
    "thread.json not an object": {"thread.json": b"[1, 2]"},
    "thread.json not UTF-8": {"thread.json": b'{"title": "\xff"}'},
    "thread.json nested too deeply": {"thread.json": b"[" * 100_000},
    "thread.json with endless digits": {"thread.json": b'{"created": ' + b"9" * 100_000 + b"}"},
}


def _leave(root: Path, files: dict[str, bytes]) -> Path:
    folder = root / "threads" / "t1"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize("name", list(LEFTOVERS))
def test_jan_crash_leftover_is_ignored_and_its_id_can_be_created_again(
    tmp_path: Path, name: str
) -> None:
    """Guards against a thread folder a crash left without a readable thread.json
    blocking its id for good (ThreadExists), breaking list() or get() with an
    unhandled exception, or leaking its old messages into the new thread."""
    store = JanThreadStore(tmp_path)
    _leave(tmp_path, LEFTOVERS[name])
    assert store.list() == []
    with pytest.raises(ThreadNotFound):
        store.get("t1")
    with pytest.raises(ThreadNotFound):
        store.messages("t1")
    with pytest.raises(ThreadNotFound):
        store.append("t1", [say("lost")])
    created = store.create("t1", title="again")
    assert store.get("t1") == created
    assert [t.id for t in store.list()] == ["t1"]
    assert store.messages("t1") == []
    store.append("t1", [say("new")])
    assert [m.content for m in store.messages("t1")] == ["new"]
    with pytest.raises(ThreadExists):
        store.create("t1")


def test_jan_leftover_with_messages_is_kept_aside_not_destroyed(tmp_path: Path) -> None:
    """Guards the repair against throwing away data: a leftover folder that holds
    messages is moved out of the way (hidden, unlisted), not deleted."""
    store = JanThreadStore(tmp_path)
    _leave(tmp_path, LEFTOVERS["messages but no thread.json"])
    store.create("t1")
    kept = [
        path
        for path in (tmp_path / "threads").iterdir()
        if path.name.startswith(".") and (path / "messages.jsonl").is_file()
    ]
    assert len(kept) == 1
    assert b"orphan" in (kept[0] / "messages.jsonl").read_bytes()


def test_jan_concurrent_creates_over_a_leftover_make_one_thread(tmp_path: Path) -> None:
    """Guards the repair against a race: of many creators of a leftover id, exactly
    one succeeds and the rest get ThreadExists."""
    _leave(tmp_path, LEFTOVERS["truncated thread.json"])
    stores = [JanThreadStore(tmp_path) for _ in range(8)]
    outcomes: list[str] = []
    start = threading.Barrier(len(stores))

    def create(store: JanThreadStore) -> None:
        start.wait(timeout=BOUND)
        try:
            store.create("t1", title="mine")
            outcomes.append("created")
        except ThreadExists:
            outcomes.append("exists")

    workers = [threading.Thread(target=create, args=(s,)) for s in stores]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=BOUND)
    assert not any(w.is_alive() for w in workers)
    assert sorted(outcomes) == ["created"] + ["exists"] * (len(stores) - 1)
    assert [t.id for t in stores[0].list()] == ["t1"]


def test_jan_leftovers_of_crashed_deletes_and_creates_are_swept(tmp_path: Path) -> None:
    """Guards against the hidden folders a crash in the middle of delete() or
    create() leaves: never listed, and removed when a store opens the folder."""
    threads = tmp_path / "threads"
    for name in (".deleted-t1-0123", ".creating-t2-4567"):
        (threads / name).mkdir(parents=True)
        (threads / name / "thread.json").write_text('{"title": "half"}')
        (threads / name / ".thread.json.99.tmp").write_text('{"tit')
    store = JanThreadStore(tmp_path)
    store.create("t3")
    assert [t.id for t in store.list()] == ["t3"]
    assert sorted(p.name for p in threads.iterdir() if p.is_dir()) == ["t3"]


#: Holds a lock until its stdin closes; says "ready" once it holds it.
HOLD_FLOCK = textwrap.dedent(
    """
    import fcntl, sys
    with open(sys.argv[1], "ab") as file:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX)
        print("ready", flush=True)
        sys.stdin.read()
    """
)
HOLD_SQLITE = textwrap.dedent(
    """
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("BEGIN " + sys.argv[2].upper())
    db.execute("INSERT INTO threads VALUES ('holder', '', 0, '{}')")
    print("ready", flush=True)
    sys.stdin.read()
    db.execute("ROLLBACK")
    """
)


@pytest.fixture
def holder() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts a process that holds a lock; it lets go when the test ends."""
    procs: list[subprocess.Popen[str]] = []

    def start(script: str, *args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            assert selector.select(timeout=BOUND), "the lock holder did not start"
        assert proc.stdout.readline() == "ready\n"
        return proc

    yield start
    for proc in procs:
        release(proc)


def release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    if not proc.stdin.closed:
        proc.stdin.close()
    try:
        proc.wait(timeout=BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=BOUND)


def _bounded(call: Callable[[], object]) -> tuple[BaseException | None, float]:
    """What ``call`` raised (None if nothing) and how long it took; fails if it hangs."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    began = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=BOUND)
    assert not worker.is_alive(), f"still waiting after {BOUND} s"
    return outcome[0], time.monotonic() - began


def test_jan_append_under_a_held_file_lock_fails_after_a_bounded_wait(
    tmp_path: Path, holder: Callable[..., subprocess.Popen[str]]
) -> None:
    """Guards against append() waiting forever on a messages.jsonl another process
    keeps locked: it raises StoreError after the lock timeout, and works once the
    lock is free."""
    store = JanThreadStore(tmp_path, lock_timeout=0.5)
    store.create("t1")
    proc = holder(HOLD_FLOCK, str(tmp_path / "threads" / "t1" / "messages.jsonl"))
    error, took = _bounded(lambda: store.append("t1", [say("blocked")]))
    assert isinstance(error, StoreError), repr(error)
    assert 0.4 < took < 10
    release(proc)
    store.append("t1", [say("free")])
    assert [m.content for m in store.messages("t1")] == ["free"]


def test_sqlite_write_under_a_held_lock_raises_store_error(
    tmp_path: Path, holder: Callable[..., subprocess.Popen[str]]
) -> None:
    """Guards against lock contention escaping as a raw sqlite3.OperationalError
    ("database is locked"): with the default busy timeout it is a StoreError
    chained to the sqlite3 error, within a bounded wait."""
    store = SqliteThreadStore(tmp_path / "t.db")
    store.create("t1")
    holder(HOLD_SQLITE, str(tmp_path / "t.db"), "immediate")
    error, _ = _bounded(lambda: store.create("t2"))
    assert isinstance(error, StoreError), repr(error)
    assert isinstance(error.__cause__, sqlite3.OperationalError)
    store.close()


def test_sqlite_every_write_under_a_held_lock_raises_store_error(
    tmp_path: Path, holder: Callable[..., subprocess.Popen[str]]
) -> None:
    """Guards every writing method of the SQLite store: while another process holds
    the write lock each raises StoreError (chained to the sqlite3 error) after the
    busy timeout; reads go on meanwhile, and writes work again once the lock is gone."""
    store = SqliteThreadStore(tmp_path / "t.db", busy_timeout=0.3)
    store.create("t1")
    store.append("t1", [say("hello")])
    proc = holder(HOLD_SQLITE, str(tmp_path / "t.db"), "immediate")
    writes: dict[str, Callable[[], object]] = {
        "create": lambda: store.create("t2"),
        "append": lambda: store.append("t1", [say("blocked")]),
        "delete": lambda: store.delete("t1"),
    }
    for name, call in writes.items():
        error, took = _bounded(call)
        assert isinstance(error, StoreError), (name, repr(error))
        assert isinstance(error.__cause__, sqlite3.OperationalError), name
        assert 0.2 < took < 10, (name, took)
    assert [t.id for t in store.list()] == ["t1"]
    assert [m.content for m in store.messages("t1")] == ["hello"]
    assert [tid for tid, _ in store.search("hello")] == ["t1"]
    release(proc)
    store.append("t1", [say("free")])
    assert [m.content for m in store.messages("t1")] == ["hello", "free"]
    store.close()


def test_sqlite_errors_after_close_or_corruption_are_store_errors(tmp_path: Path) -> None:
    """Guards the store's interface against other sqlite3 errors: a closed store
    and a file overwritten with garbage raise StoreError, not sqlite3 errors."""
    closed = SqliteThreadStore(tmp_path / "closed.db")
    closed.close()
    for call in (closed.list, lambda: closed.create("t1"), lambda: closed.get("t1")):
        with pytest.raises(StoreError) as caught:
            call()
        assert isinstance(caught.value.__cause__, sqlite3.Error)
    closed.close()  # closing twice is harmless
    (tmp_path / "bad.db").write_bytes(b"not a database" * 1000)
    with pytest.raises(StoreError):
        SqliteThreadStore(tmp_path / "bad.db")


def test_jan_messages_file_with_hostile_lines_skips_them(tmp_path: Path) -> None:
    """Guards messages() against lines no JSON parser survives whole (deep nesting,
    endless digits): they are skipped like any corrupt line, not a RecursionError."""
    store = JanThreadStore(tmp_path)
    store.create("t1")
    store.append("t1", [say("before")])
    path = tmp_path / "threads" / "t1" / "messages.jsonl"
    with path.open("ab") as file:
        file.write(b"[" * 100_000 + b"\n" + b"9" * 100_000 + b"\n")
    store.append("t1", [say("after")])
    assert [m.content for m in store.messages("t1")] == ["before", "after"]
    assert [tid for tid, _ in store.search("after")] == ["t1"]
