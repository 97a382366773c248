"""Group commit in the Jan folder store: ``append`` returns once the lines are
written, a thread of the store fsyncs them right after, appends made meanwhile
share one fsync, and a failed fsync is reported by the next append."""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime.errors import StoreError
from lmc_runtime.messages import Message
from lmc_runtime.store import JanThreadStore, open_store

#: A bound that only a hang reaches.
HANG = 30.0


def say(text: str) -> Message:
    return Message(role="user", type="message", content=text)


class Disk:
    """``os.fsync`` as the store's sync thread sees it: it records the inode of
    every fsync, can be held (the disk is slow) and can fail. Other threads'
    fsyncs (making a thread, say) go to the real one, and are recorded apart."""

    def __init__(self) -> None:
        self.synced: list[int] = []
        self.synced_elsewhere: list[int] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()
        self.error: OSError | None = None
        self._real = os.fsync

    def fsync(self, fd: int) -> None:
        if threading.current_thread().name != "store-sync":
            self._real(fd)
            self.synced_elsewhere.append(os.fstat(fd).st_ino)
            return
        self.entered.set()
        assert self.release.wait(HANG), "the test never released the disk"
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        self._real(fd)
        self.synced.append(os.fstat(fd).st_ino)


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Disk:
    fake = Disk()
    monkeypatch.setattr(os, "fsync", fake.fsync)
    return fake


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JanThreadStore]:
    made = JanThreadStore(tmp_path / "jan", group_commit=True)
    made.create("t1")
    yield made
    made.close()


def _messages_file(store: JanThreadStore, thread_id: str = "t1") -> Path:
    return store.root / "threads" / thread_id / "messages.jsonl"


def test_append_returns_before_the_fsync_and_readers_see_the_lines(
    store: JanThreadStore, disk: Disk
) -> None:
    disk.release.clear()  # the disk is slow: the fsync does not end
    store.append("t1", [say("one")])
    assert disk.entered.wait(HANG)  # the sync thread is in its fsync...
    assert [m.content for m in store.messages("t1")] == ["one"]  # ...and the line is there
    assert not store._group.flush(timeout=0.05)  # type: ignore[union-attr]
    disk.release.set()
    assert store._group.flush(timeout=HANG)  # type: ignore[union-attr]
    assert disk.synced == [_messages_file(store).stat().st_ino]


def test_appends_made_during_an_fsync_share_the_next_one(store: JanThreadStore, disk: Disk) -> None:
    disk.release.clear()
    store.append("t1", [say("first")])
    assert disk.entered.wait(HANG)
    for n in range(20):
        store.append("t1", [say(f"meanwhile {n}")])
    disk.release.set()
    assert store._group.flush(timeout=HANG)  # type: ignore[union-attr]
    # One fsync for the first append, then one for the twenty made meanwhile.
    assert len(disk.synced) == 2
    assert len(store.messages("t1")) == 21


def test_a_failed_fsync_makes_the_next_append_a_store_error_once(
    store: JanThreadStore, disk: Disk
) -> None:
    disk.error = OSError(errno.EIO, "Input/output error")
    store.append("t1", [say("lost on a power cut, perhaps")])
    assert store._group.flush(timeout=HANG)  # type: ignore[union-attr]
    with pytest.raises(StoreError, match="did not reach the disk"):
        store.append("t1", [say("refused: the caller keeps it and retries")])
    store.append("t1", [say("retried")])
    assert [m.content for m in store.messages("t1")] == [
        "lost on a power cut, perhaps",
        "retried",
    ]


def test_close_waits_for_the_disk_and_later_appends_sync_at_once(
    tmp_path: Path, disk: Disk
) -> None:
    store = JanThreadStore(tmp_path / "jan", group_commit=True)
    store.create("t1")
    disk.release.clear()
    store.append("t1", [say("pending")])
    assert disk.entered.wait(HANG)
    closer = threading.Thread(target=store.close)
    closer.start()
    closer.join(0.05)
    assert closer.is_alive()  # close waits for the fsync...
    disk.release.set()
    closer.join(HANG)
    assert not closer.is_alive() and len(disk.synced) == 1  # ...which then ends
    disk.synced_elsewhere.clear()
    store.append("t1", [say("after close")])  # synced by the caller itself
    assert disk.synced_elsewhere == [_messages_file(store).stat().st_ino]


def test_without_group_commit_append_fsyncs_before_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        real(fd)
        synced.append(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    store = JanThreadStore(tmp_path / "jan")
    store.create("t1")
    synced.clear()
    store.append("t1", [say("one")])
    assert len(synced) == 1
    store.close()


def test_open_store_gives_the_jan_folder_group_commit_when_asked(tmp_path: Path) -> None:
    store = open_store(None, tmp_path, group_commit=True)
    assert isinstance(store, JanThreadStore) and store._group is not None
    store.close()
    plain = open_store(None, tmp_path)
    assert isinstance(plain, JanThreadStore) and plain._group is None


def test_append_now_writes_only_when_nothing_would_wait(store: JanThreadStore, disk: Disk) -> None:
    # A thread not appended to yet is looked up first (a read): not now.
    assert not store.append_now("t1", [say("not yet")])
    store.append("t1", [say("one")])
    assert store.append_now("t1", [say("two")])
    # Another writer (another process, say) holds the file: nothing written, no wait.
    fd = os.open(_messages_file(store), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert not store.append_now("t1", [say("held")])
    finally:
        os.close(fd)
    assert store.append_now("t1", [say("three")])
    assert store._group.flush(timeout=HANG)  # type: ignore[union-attr]
    assert [m.content for m in store.messages("t1")] == ["one", "two", "three"]


def test_append_now_is_never_taken_without_group_commit(tmp_path: Path) -> None:
    store = JanThreadStore(tmp_path / "jan")
    store.create("t1")
    store.append("t1", [say("one")])
    assert not store.append_now("t1", [say("would fsync in the caller")])
    assert [m.content for m in store.messages("t1")] == ["one"]
    store.close()


def test_appends_within_the_window_share_one_fsync_and_close_ends_the_window(
    tmp_path: Path, disk: Disk
) -> None:
    store = JanThreadStore(tmp_path / "jan", group_commit=True)
    store.create("t1")
    store._group._window = HANG  # type: ignore[union-attr]  # the window outlasts the test
    store.append("t1", [say("a run's code")])
    store.append("t1", [say("its end")])
    assert not store._group.flush(timeout=0.05)  # type: ignore[union-attr]  # still gathering
    store.close()  # ends the window at once, and waits for the one fsync
    assert disk.synced == [_messages_file(store).stat().st_ino]
