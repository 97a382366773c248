"""Stopping a run: the deadline, interrupts, the harder rung, the restart, and callers that leave."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from lmc_runtime.messages import Message
from lmc_runtime.replies import Status

from ....fakes import FakeBackend
from .harness import extras, finals, outputs, started, until

pytestmark = pytest.mark.anyio

#: Short enough to keep the tier fast, long enough to be seen as "after".
QUICK = 0.05


def _notices(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.format == "output" and m.status is not None]


async def test_at_the_deadline_the_code_is_interrupted_and_its_state_kept(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        messages = await h.run("line 4\nhang", timeout=QUICK)
    (notice,) = _notices(messages)
    assert notice.status == Status.TIMEOUT and extras(notice)["state_lost"] is False
    assert "timed out after 0.05 s at line 4" in notice.content
    assert "state was kept" in notice.content and extras(notice)["line"] == 4
    assert messages[-1].status == Status.TIMEOUT and extras(messages[-1])["state_lost"] is False
    assert h.fake.signals == [signal.SIGINT] and len(h.backend.interpreters) == 1


async def test_a_run_that_finishes_in_time_is_not_interrupted(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        messages = await h.run("print a", timeout=QUICK)
        # The deadline is over by now: a watchdog still around would fire.
        await h.run("print b")
    assert messages[-1].status == Status.OK and h.fake.signals == []


async def test_an_ignored_interrupt_consults_escalate_then_restarts(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        messages = await h.run("wedge", timeout=QUICK, interrupt_grace=QUICK)
        assert h.backend.escalations == 1
        first = h.backend.interpreters[0]
        assert first.kills and first.signals == [signal.SIGINT]
        (notice,) = _notices(messages)
        assert notice.status == Status.TIMEOUT and extras(notice)["state_lost"] is True
        assert "did not stop within 0.05 s" in notice.content and "restarted" in notice.content
        assert messages[-1].status == Status.TIMEOUT
        assert extras(messages[-1])["state_lost"] is True
        after = await h.run("print again")
    assert outputs(after) == ["again\n"] and after[-1].status == Status.OK
    assert len(h.backend.interpreters) == 2 and h.fake.codes == ["print again"]


async def test_a_harder_rung_that_works_keeps_the_state(tmp_path: Path) -> None:
    async with started(tmp_path, FakeBackend(escalates=True)) as h:
        messages = await h.run("stubborn", timeout=QUICK, interrupt_grace=QUICK)
    assert h.fake.signals == [signal.SIGINT, signal.SIGTERM]
    assert messages[-1].status == Status.TIMEOUT and extras(messages[-1])["state_lost"] is False
    assert len(h.backend.interpreters) == 1


async def test_a_harder_rung_that_fails_restarts_after_another_grace(tmp_path: Path) -> None:
    async with started(tmp_path, FakeBackend(escalates=True)) as h:
        messages = await h.run("wedge", timeout=QUICK, interrupt_grace=QUICK)
    assert h.backend.interpreters[0].signals == [signal.SIGINT, signal.SIGTERM]
    assert extras(messages[-1])["state_lost"] is True and len(h.backend.interpreters) == 2


async def test_interrupt_stops_the_running_code_and_keeps_its_state(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        run = h.execute("print started\nline 2\nhang\nprint after")
        await until(run, lambda m: m.content == "started\n")
        await h.session.interrupt()
        rest = [m async for m in run]
    (notice,) = _notices(rest)
    assert notice.status == Status.INTERRUPTED and "was interrupted" in notice.content
    assert rest[-1].status == Status.INTERRUPTED and extras(rest[-1])["state_lost"] is False
    assert "after\n" in outputs(rest), "the code goes on after the interrupt, as it chooses"


async def test_an_ignored_interrupt_restarts_with_status_interrupted(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        run = h.execute("print started\nwedge", interrupt_grace=QUICK)
        await until(run, lambda m: m.content == "started\n")
        await h.session.interrupt()
        rest = [m async for m in run]
    assert rest[-1].status == Status.INTERRUPTED and extras(rest[-1])["state_lost"] is True
    assert len(h.backend.interpreters) == 2


async def test_interrupt_with_nothing_running_does_nothing(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        await h.run("print a")
        await h.session.interrupt()
        messages = await h.run("print b")
    assert h.fake.signals == [] and outputs(messages) == ["b\n"]


async def test_closing_the_iterator_early_stops_the_code_and_frees_the_session(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        run = h.execute("print started\nhang\nprint after the stop", reply_to="c1")
        await until(run, lambda m: m.content == "started\n")
        await run.aclose()
        assert h.fake.signals == [signal.SIGINT]
        messages = await h.run("print next", reply_to="c2")
    assert [m.in_reply_to for m in messages] == ["c2", "c2"], "nothing of the left run leaks"
    assert outputs(messages) == ["next\n"] and len(h.backend.interpreters) == 1


async def test_leaving_code_that_ignores_the_interrupt_restarts_it_and_frees_the_session(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        run = h.execute("print started\nwedge", interrupt_grace=QUICK)
        await until(run, lambda m: m.content == "started\n")
        await run.aclose()
        messages = await h.run("print next", reply_to="c2")
    assert outputs(messages)[1:] == ["next\n"] and messages[-1].status == Status.OK
    assert len(h.backend.interpreters) == 2
    # Regression: the restart's notice went to the left run, and was dropped with it:
    # the next run never heard that the state was lost.
    (news,) = _notices(messages)
    assert news.status == Status.INTERRUPTED and extras(news)["state_lost"] is True
    assert "its state was lost" in str(news.content) and news.in_reply_to == "c2"


async def test_restarting_on_request_after_a_caller_left_is_no_news(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        run = h.execute("print started\nwedge", interrupt_grace=60)
        await until(run, lambda m: m.content == "started\n")
        await run.aclose()
        await h.session.restart()
        messages = await h.run("print next", reply_to="c2")
    assert outputs(messages) == ["next\n"]


async def test_leaving_a_run_that_floods_never_blocks_the_interpreter(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        run = h.execute("err started\n" + "\n".join(["flood 10"] * 3000) + "\nhang")
        await until(run, lambda m: m.content == "started\n")
        await run.aclose()
        messages = await h.run("print next", reply_to="c2")
    assert outputs(messages) == ["next\n"] and len(h.backend.interpreters) == 1


async def test_a_caller_that_stops_reading_does_not_hold_the_next_run(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        first = h.execute("print a\nprint b", reply_to="c1")
        await first.__anext__()  # then never reads again
        second = await h.run("print c", reply_to="c2")
        assert outputs(second) == ["c\n"]
        await first.aclose()


async def test_the_watchdog_frees_the_session_of_a_caller_that_stops_reading(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        first = h.execute("print a\nwedge", reply_to="c1", timeout=QUICK, interrupt_grace=QUICK)
        await first.__anext__()  # then never reads again
        second = await h.run("print c", reply_to="c2")
        assert outputs(second) == ["c\n"] and len(h.backend.interpreters) == 2
        rest = [m async for m in first]
    assert len(finals(rest)) == 1 and rest[-1].status == Status.TIMEOUT


async def test_the_deadline_holds_for_a_caller_that_reads_slowly(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        run = h.execute("print a\nhang", timeout=QUICK)
        await run.__anext__()
        await h.fake.signalled.wait()
        rest = [m async for m in run]
    assert rest[-1].status == Status.TIMEOUT


async def test_a_restart_that_cannot_start_ends_the_run_and_the_next_run_tries_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Guards: when the stop ladder's restart could not start a new interpreter (a
    gateway out of reach), the start error escaped the watchdog as a traceback."""
    async with started(tmp_path) as h:
        h.backend.start_failures.append("the gateway cannot be reached")
        messages = await h.run("wedge", timeout=QUICK, interrupt_grace=QUICK)
        assert finals(messages)[-1].status == Status.TIMEOUT
        assert extras(messages[-1])["state_lost"] is True
        after = await h.run("print again")
    assert outputs(after)[-1] == "again\n" and after[-1].status == Status.OK
    assert h.backend.attempts == 3, "the first start, the failed restart, the retry"
    assert not [r for r in caplog.records if r.exc_info], "no traceback is logged"
