"""A run written ahead to each thread store: its code before it runs, its output
behind it, and a run a killed server left unfinished closed as ``server_lost``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from lmc_runtime import replies
from lmc_runtime.messages import Message, new_id
from lmc_runtime.service.transcript import Transcripts
from lmc_runtime.service.write_ahead import (
    RunRecord,
    WriteBehind,
    close_lost_runs,
    unfinished_run,
)
from lmc_runtime.store import JanThreadStore, SqliteThreadStore, ThreadStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["jan", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ThreadStore]:
    made: ThreadStore = (
        JanThreadStore(tmp_path) if request.param == "jan" else SqliteThreadStore(tmp_path / "t.db")
    )
    made.create("s1")
    yield made


def code(text: str) -> Message:
    return Message(role="assistant", type="code", format="python", content=text, id=new_id())


async def test_a_run_is_stored_before_it_runs_and_its_output_as_it_comes(
    store: ThreadStore,
) -> None:
    """Guards against a run recorded only with its final message: a server killed
    mid-run lost its code and what it printed."""
    transcripts = Transcripts(store)
    message = code("print('x'); sleep()")
    record = RunRecord(transcripts, "s1", message)
    async with anyio.create_task_group() as tg:
        tg.start_soon(transcripts.keep_trying)
        await record.begin()
        assert [m.id for m in store.messages("s1")] == [message.id]
        record.add(replies.output("x\n", message.id))
        with anyio.fail_after(10):  # written behind, without a next output or the end
            while len(store.messages("s1")) < 2:
                await anyio.sleep(0.01)
        assert getattr(unfinished_run(store.messages("s1")), "id", None) == message.id
        await record.end(replies.active_line(None, message.id, status="ok"))
        tg.cancel_scope.cancel()
    kept = store.messages("s1")
    assert [m.content for m in kept] == [message.content, "x\n", None]
    assert unfinished_run(kept) is None


async def test_an_unfinished_run_is_closed_as_server_lost_and_others_are_left(
    store: ThreadStore,
) -> None:
    """Guards the restart: only the last run without an end gets one, once."""
    done, refused, lost = code("1"), code("2"), code("3")
    store.append("s1", [done, replies.active_line(None, done.id, status="ok")])
    store.append("s1", [refused, replies.not_understood("not its language", refused.id)])
    store.create("s2")
    store.append("s2", [lost, replies.output("so far\n", lost.id)])
    transcripts = Transcripts(store)
    assert await close_lost_runs(transcripts, ["s1", "s2", "gone"]) == 1
    assert await close_lost_runs(transcripts, ["s1", "s2"]) == 0
    assert not any(m.status == replies.Status.SERVER_LOST for m in store.messages("s1"))
    final = store.messages("s2")[-1]
    assert final.is_final and final.in_reply_to == lost.id
    assert final.status == replies.Status.SERVER_LOST


async def test_a_run_record_passes_the_event_loop_no_turn_of_its_own(tmp_path: Path) -> None:
    """Regression: the record's lock, though nobody else held it, passed the
    event loop a turn at each begin, flush and end (the loop iterations of a
    run on the server: 18 a ``print(1)``). With a store that appends at once
    (the group-committed folder store), storing a run's code lets no other
    task run before it returns."""
    store = JanThreadStore(tmp_path, group_commit=True)
    store.create("s1")
    transcripts = Transcripts(store)
    await RunRecord(transcripts, "s1", code("1")).begin()  # the thread is found once
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        record = RunRecord(transcripts, "s1", code("2"))
        await record.begin()
        await record.end(replies.active_line(None, None, status="ok"))
        assert ran == []
    assert ran == ["other"]
    store.close()
    assert [m.content for m in store.messages("s1")][-2:] == ["2", None]


class Flushed:
    """A run's record as the write-behind sees it: how often it was flushed."""

    def __init__(self, behind: WriteBehind) -> None:
        self.behind = behind
        self.flushes = 0
        self.flushed = anyio.Event()

    async def flush(self) -> None:
        self.flushes += 1
        self.behind.done(self)  # type: ignore[arg-type]
        self.flushed.set()


async def test_output_is_written_behind_only_for_runs_that_did_not_store_it_first() -> None:
    """A run whose end stored its output before it was due is not flushed again
    (nor does it wake the write-behind); one that is still running is, once due."""
    behind = WriteBehind()
    async with anyio.create_task_group() as tg:
        tg.start_soon(behind.run)
        ended, running = Flushed(behind), Flushed(behind)
        behind.due(ended)  # type: ignore[arg-type]
        behind.done(ended)  # type: ignore[arg-type]  # its end stored it
        behind.due(running)  # type: ignore[arg-type]
        with anyio.fail_after(10):
            await running.flushed.wait()
        assert (ended.flushes, running.flushes) == (0, 1)
        tg.cancel_scope.cancel()
