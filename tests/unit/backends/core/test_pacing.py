"""Line pacing: which lines become ``active_line`` messages, and when."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.backends.core.pacing import LinePacer
from lmc_runtime.messages import Message

from ....fakes import FakeBackend, FakeExecution
from .harness import started, until

# -- the pacer ---------------------------------------------------------------------


def test_a_line_is_reported_after_its_dwell_and_only_once() -> None:
    pacer = LinePacer(dwell=0.02)
    pacer.see(2, now=10.0)
    assert pacer.take(now=10.01) is None
    assert pacer.due_at() == 10.02
    assert pacer.take(now=10.03) == 2
    assert pacer.take(now=11.0) is None
    assert pacer.due_at() is None


def test_nothing_is_due_before_any_line() -> None:
    pacer = LinePacer()
    assert pacer.due_at() is None and pacer.take(now=100.0) is None
    assert pacer.current is None


def test_the_line_current_when_the_dwell_ends_is_reported() -> None:
    pacer = LinePacer(dwell=0.02)
    pacer.see(1, now=0.0)
    pacer.see(2, now=0.005)
    assert pacer.take(now=0.015) is None
    assert pacer.take(now=0.021) == 2
    assert pacer.current == 2


def test_the_dwell_counts_from_when_the_code_left_the_reported_line() -> None:
    pacer = LinePacer(dwell=0.02)
    pacer.see(1, now=0.0)
    assert pacer.take(now=0.02) == 1
    pacer.see(1, now=0.5)  # still there: nothing new
    assert pacer.due_at() is None
    pacer.see(2, now=1.0)
    pacer.see(3, now=1.01)
    assert pacer.due_at() == pytest.approx(1.02)


def test_regression_a_tight_loop_over_short_lines_is_still_reported() -> None:
    pacer = LinePacer(dwell=0.02)
    reported = []
    for step in range(100):  # lines 2 and 3 alternate every millisecond
        now = step / 1000
        pacer.see(2 + step % 2, now)
        line = pacer.take(now)
        if line is not None:
            reported.append(line)
    assert reported and len(reported) <= 100 / 20 + 1


def test_coming_back_to_a_line_reports_it_again_after_another() -> None:
    pacer = LinePacer(dwell=0.0)
    pacer.see(1, now=0.0)
    assert pacer.take(now=0.0) == 1
    pacer.see(2, now=1.0)
    assert pacer.take(now=1.0) == 2
    pacer.see(1, now=2.0)
    assert pacer.take(now=2.0) == 1


def test_with_an_interval_and_no_dwell_the_first_line_shows_at_once() -> None:
    pacer = LinePacer(dwell=0.0, interval=0.02)
    pacer.see(1, now=5.0)
    assert pacer.take(now=5.0) == 1


def test_an_interval_spaces_reports_out() -> None:
    pacer = LinePacer(dwell=0.0, interval=0.02)
    pacer.see(1, now=0.0)
    assert pacer.take(now=0.0) == 1
    pacer.see(2, now=0.001)
    pacer.see(3, now=0.002)
    assert pacer.take(now=0.01) is None
    assert pacer.due_at() == pytest.approx(0.02)
    assert pacer.take(now=0.02) == 3


def test_no_dwell_and_no_interval_report_every_change() -> None:
    pacer = LinePacer(dwell=0.0, interval=0.0)
    reported = []
    for line in (1, 2, 3, 2):
        pacer.see(line, now=0.0)
        reported.append(pacer.take(now=0.0))
    assert reported == [1, 2, 3, 2]


# -- lines in a run ----------------------------------------------------------------


class _EveryLine(FakeExecution):
    dwell = 0.0
    interval = 0.0


class _LongDwell(FakeExecution):
    dwell = 60.0


def _backend(execution: type[FakeExecution]) -> FakeBackend:
    class Backend(FakeBackend):
        pass

    Backend.execution = execution
    return Backend()


def _lines(messages: list[Message]) -> list[Any]:
    return [m.content for m in messages if m.format == "active_line" and m.content is not None]


@pytest.mark.anyio
async def test_lines_that_do_not_stay_for_the_dwell_are_not_reported(tmp_path: Path) -> None:
    async with started(tmp_path, _backend(_LongDwell)) as h:
        messages = await h.run("line 1\nline 2\nprint a\nline 3")
    assert _lines(messages) == [] and messages[-1].is_final


@pytest.mark.anyio
async def test_a_line_that_stays_current_is_reported(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        run = h.execute("line 3\nhang")
        seen = await until(run, lambda m: m.format == "active_line")
        assert seen[-1].content == 3 and seen[-1].in_reply_to == "c1"
        await h.session.interrupt()
        rest = [m async for m in run]
    assert rest[-1].is_final and _lines(rest) == []


@pytest.mark.anyio
async def test_without_pacing_every_line_is_reported_in_order(tmp_path: Path) -> None:
    async with started(tmp_path, _backend(_EveryLine)) as h:
        messages = await h.run("line 1\nprint a\nline 2\nline 3")
    assert [m.content for m in messages] == [1, "a\n", 2, 3, None]


@pytest.mark.anyio
async def test_lines_are_not_reported_when_tracking_is_off(tmp_path: Path) -> None:
    async with started(tmp_path, _backend(_EveryLine)) as h:
        messages = await h.run("line 1\nline 2\nprint a", track_lines=False)
    assert [m.content for m in messages] == ["a\n", None]
