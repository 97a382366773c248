"""Output that comes after its run ended: kept, bounded, and said by the next run."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime.backends.core import Output
from lmc_runtime.replies import Status

from .harness import extras, outputs, started

pytestmark = pytest.mark.anyio

_LATE_LIMIT = 64 * 1024


async def test_late_output_comes_first_in_the_next_run_tagged_with_its_own(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        await h.run("print a", reply_to="c1")
        await h.fake.emit(Output("late\n"))
        await h.fake.emit(Output("oops\n", "stderr"), 1)
        messages = await h.run("print b", reply_to="c2")
    late, oops, b, final = messages
    assert (late.content, late.in_reply_to, extras(late)) == ("late\n", "c1", {"late": True})
    assert (oops.content, oops.in_reply_to) == ("oops\n", "c1")
    assert extras(oops) == {"late": True, "stream": "stderr"}
    assert b.content == "b\n" and b.in_reply_to == "c2" and final.is_final


async def test_late_output_is_said_once(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        await h.run("print a", reply_to="c1")
        await h.fake.emit(Output("late\n"))
        await h.run("print b", reply_to="c2")
        messages = await h.run("print c", reply_to="c3")
    assert outputs(messages) == ["c\n"]


async def test_late_output_is_bounded_and_what_was_dropped_is_said(tmp_path: Path) -> None:
    piece = "x" * 1000
    async with started(tmp_path) as h:
        await h.run("print a", reply_to="c1")
        for _ in range(70):
            await h.fake.emit(Output(piece))
        messages = await h.run("print b", reply_to="c2")
    kept = [m for m in messages if extras(m).get("late")]
    assert sum(len(m.content) for m in kept) == (_LATE_LIMIT // 1000) * 1000
    (notice,) = [m for m in messages if m.status == Status.TRUNCATED]
    dropped = 70 * 1000 - (_LATE_LIMIT // 1000) * 1000
    assert extras(notice)["omitted_bytes"] == dropped and notice.in_reply_to == "c2"
    assert f"{dropped} bytes of late output" in notice.content
    assert messages.index(notice) == len(kept), "the notice follows what was kept"


async def test_output_keyed_to_an_earlier_run_stays_out_of_the_open_run(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        await h.run("print a", reply_to="c1")
        run = h.execute("print started\ngate g", reply_to="c2")
        first = await run.__anext__()
        await h.fake.emit(Output("for c1\n"), 1)
        h.fake.open("g")
        second = [first, *[m async for m in run]]
        third = await h.run("print c", reply_to="c3")
    assert outputs(second) == ["started\n"]
    assert [(m.content, m.in_reply_to) for m in third[:1]] == [("for c1\n", "c1")]


async def test_output_keyed_to_an_unknown_run_is_dropped(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        await h.run("print a", reply_to="c1")
        await h.fake.emit(Output("whose?\n"), "no such run")
        messages = await h.run("print b", reply_to="c2")
    assert outputs(messages) == ["b\n"]


async def test_output_of_a_run_long_retired_is_dropped(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        for n in range(1, 19):
            await h.run("print a", reply_to=f"c{n}")
        await h.fake.emit(Output("ancient\n"), 1)
        await h.fake.emit(Output("recent\n"), 18)
        messages = await h.run("print b", reply_to="c19")
    assert [(m.content, m.in_reply_to) for m in messages[:2]] == [
        ("recent\n", "c18"),
        ("b\n", "c19"),
    ]


async def test_output_right_after_the_end_is_kept_for_its_run(tmp_path: Path) -> None:
    """Output keyed to a run that has finished, before its caller read the end."""
    async with started(tmp_path) as h:
        first = await h.run("print a\nfinish ok\nprint right after", reply_to="c1")
        second = await h.run("print b", reply_to="c2")
    assert outputs(first) == ["a\n"]
    assert [(m.content, m.in_reply_to) for m in second[:1]] == [("right after\n", "c1")]
    assert extras(second[0])["late"] is True


async def test_unkeyed_output_right_after_the_end_is_kept_for_that_run(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        await h.run("print a", reply_to="c1")
        await h.run("print b\nfinish ok\nnative right after", reply_to="c2")
        third = await h.run("print c", reply_to="c3")
    assert [(m.content, m.in_reply_to) for m in third[:1]] == [("right after\n", "c2")]
