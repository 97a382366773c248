"""What the service does with transcripts while its store fails: held in order,
told in every run, written once the store works, bounded, never written twice."""

from __future__ import annotations

import builtins
import errno
import os
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from lmc_runtime import replies
from lmc_runtime.errors import StoreError
from lmc_runtime.messages import Message
from lmc_runtime.service.transcript import STORE_UNAVAILABLE, Transcripts
from lmc_runtime.store import JanThreadStore, Thread
from lmc_runtime.store._files import append_lines


class FailingStore:
    """A real Jan store that fails every call while ``down`` is set, as a store
    whose disk is full or whose database is gone does."""

    def __init__(self, root: Path) -> None:
        self.inner = JanThreadStore(root)
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise StoreError("cannot append: the database is gone")

    def create(
        self,
        thread_id: str | None = None,
        *,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> Thread:
        self._check()
        return self.inner.create(thread_id, title=title, metadata=metadata)

    def append(self, thread_id: str, messages: Iterable[Message]) -> None:
        self._check()
        self.inner.append(thread_id, messages)

    def messages(self, thread_id: str) -> builtins.list[Message]:
        return self.inner.messages(thread_id)

    def close(self) -> None:
        self.inner.close()


def _run(n: int) -> list[Message]:
    """The messages of one run: its output and its final message."""
    return [replies.output(f"run {n}\n", f"m{n}"), replies.active_line(None, f"m{n}", status="ok")]


def _texts(store: FailingStore, thread_id: str) -> list[Any]:
    return [m.content for m in store.messages(thread_id) if m.format == "output"]


@pytest.fixture
def failing(tmp_path: Path) -> Iterator[FailingStore]:
    store = FailingStore(tmp_path)
    yield store
    store.close()


def test_messages_held_while_the_store_fails_are_written_in_order_once_it_works(
    failing: FailingStore,
) -> None:
    """Guards against a failing store's messages being logged and lost."""

    async def scenario() -> None:
        transcripts = Transcripts(failing)  # type: ignore[arg-type]
        await transcripts.open("s1", title="t", metadata={})
        await transcripts.append("s1", _run(1))
        assert transcripts.notice("s1", "m1") is None
        failing.down = True
        await transcripts.append("s1", _run(2))
        await transcripts.append("s1", _run(3))
        notice = transcripts.notice("s1", "m3")
        assert notice is not None and notice.status == STORE_UNAVAILABLE
        assert (notice.extras or {})["held"] == 4 and "the database is gone" in notice.content
        # A session made while it fails gets its thread later.
        await transcripts.open("s2", title="later", metadata={"k": 1})
        await transcripts.append("s2", _run(9))
        failing.down = False
        with anyio.fail_after(30):  # the store is tried again at its own pace
            while transcripts.held:
                await transcripts.append("s1", _run(4))
                await anyio.sleep(0.1)
        assert transcripts.notice("s1", "m4") is None
        await transcripts.aclose()

    anyio.run(scenario)
    texts = _texts(failing, "s1")
    assert texts[:3] == ["run 1\n", "run 2\n", "run 3\n"], texts
    assert set(texts[3:]) == {"run 4\n"}, texts
    assert _texts(failing, "s2") == ["run 9\n"]


def test_held_messages_are_written_once_the_store_works_without_another_run(
    failing: FailingStore,
) -> None:
    """Guards: what was held waited for the session's next run (or the server's
    stop) to be written, however long ago the store came back."""

    async def scenario() -> None:
        transcripts = Transcripts(failing)  # type: ignore[arg-type]
        await transcripts.open("s1", title="t", metadata={})
        async with anyio.create_task_group() as tg:
            tg.start_soon(transcripts.keep_trying)
            failing.down = True
            await transcripts.append("s1", _run(1))
            await transcripts.append("s1", _run(2))
            assert transcripts.held == 4
            failing.down = False  # and no run comes any more
            with anyio.fail_after(30):  # the first retry is due after 0.5 s
                while transcripts.held:
                    await anyio.sleep(0.05)
            assert transcripts.notice("s1", "m2") is None
            tg.cancel_scope.cancel()
        await transcripts.aclose()

    anyio.run(scenario)
    assert _texts(failing, "s1") == ["run 1\n", "run 2\n"]


class LostAnswers(FailingStore):
    """Stores the next ``lost`` appends, then fails them: a database that
    committed but whose answer never came back."""

    lost = 0

    def append(self, thread_id: str, messages: Iterable[Message]) -> None:
        self.inner.append(thread_id, messages)
        if self.lost:
            self.lost -= 1
            raise StoreError("server closed the connection unexpectedly")


def test_a_run_stored_by_an_append_that_seemed_to_fail_is_not_written_twice(
    tmp_path: Path,
) -> None:
    """Guards: a retry wrote again what a commit whose answer was lost had stored."""
    store = LostAnswers(tmp_path)

    async def scenario() -> None:
        transcripts = Transcripts(store)  # type: ignore[arg-type]
        await transcripts.open("s1", title="t", metadata={})
        store.lost = 2  # the run's own append, then the first retry (with run 2)
        await transcripts.append("s1", _run(1))
        assert transcripts.held == 2
        await transcripts.append("s1", _run(2))  # held too: the retry is not due yet
        async with anyio.create_task_group() as tg:
            tg.start_soon(transcripts.keep_trying)
            with anyio.fail_after(30):
                while transcripts.held:
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        await transcripts.append("s1", _run(3))
        await transcripts.aclose()

    try:
        anyio.run(scenario)
        assert _texts(store, "s1") == ["run 1\n", "run 2\n", "run 3\n"]
        ids = [m.id for m in store.messages("s1")]
        assert len(ids) == len(set(ids)) == 6
    finally:
        store.close()


def test_what_is_held_is_bounded_and_what_did_not_fit_is_counted(failing: FailingStore) -> None:
    async def scenario() -> Message | None:
        transcripts = Transcripts(failing, held_bytes=2_000)  # type: ignore[arg-type]
        await transcripts.open("s1", title="t", metadata={})
        failing.down = True
        for n in range(10):
            await transcripts.append("s1", _run(n))
        notice = transcripts.notice("s1", "m9")
        await transcripts.aclose()
        return notice

    notice = anyio.run(scenario)
    assert notice is not None
    extras = notice.extras or {}
    assert extras["dropped"] > 0 and extras["held"] + extras["dropped"] == 20, extras
    assert f"{extras['dropped']} messages could not be held" in notice.content


def test_a_thread_removed_under_the_service_is_made_again(failing: FailingStore) -> None:
    async def scenario() -> None:
        transcripts = Transcripts(failing)  # type: ignore[arg-type]
        await transcripts.open("s1", title="t", metadata={})
        failing.inner.delete("s1")
        await transcripts.append("s1", _run(1))
        with anyio.fail_after(30):
            while transcripts.held:
                await anyio.sleep(0.1)
                await transcripts.append("s1", _run(2))
        await transcripts.aclose()

    anyio.run(scenario)
    assert _texts(failing, "s1")[0] == "run 1\n"


def test_a_jan_append_cut_short_by_a_full_disk_leaves_nothing_behind(tmp_path: Path) -> None:
    """Guards against a failed append leaving its first lines, which the retry
    wrote a second time."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], check=True)
    try:
        path = disk / "messages.jsonl"
        append_lines(path, ['{"n": 0}'], 5)
        before = path.read_bytes()
        with pytest.raises(OSError) as caught:
            append_lines(path, ['{"pad": "' + "x" * 1000 + '"}'] * 1000, 5)
        assert caught.value.errno == errno.ENOSPC
        assert path.read_bytes() == before
    finally:
        subprocess.run(["umount", str(disk)], check=True)
