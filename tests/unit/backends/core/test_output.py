"""Output: what is waiting of one stream is joined, up to a bound; streams keep their order."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import extras, outputs, started

pytestmark = pytest.mark.anyio

_LIMIT = 64 * 1024


async def test_waiting_output_of_one_stream_is_one_message(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        messages = await h.run("write a\nwrite b\nprint c")
    assert outputs(messages) == ["abc\n"]


async def test_output_of_different_streams_is_not_joined_and_keeps_its_order(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        messages = await h.run("print a\nprint b\nerr c\nerr d\nprint e")
    assert outputs(messages) == ["a\nb\n", "c\nd\n", "e\n"]
    assert [extras(m).get("stream") for m in messages[:3]] == [None, "stderr", None]


async def test_joining_is_bounded(tmp_path: Path) -> None:
    piece = 20_000
    async with started(tmp_path) as h:
        messages = await h.run("\n".join([f"flood {piece}"] * 8))
    texts = outputs(messages)
    assert sum(map(len, texts)) == 8 * piece
    assert len(texts) > 1 and all(len(t) < _LIMIT + piece for t in texts)


async def test_output_that_is_not_waiting_yet_is_not_waited_for(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        run = h.execute("write a\ngate g\nwrite b")
        first = await run.__anext__()
        assert first.content == "a"
        h.fake.open("g")
        rest = [m async for m in run]
    assert outputs(rest) == ["b"] and rest[-1].is_final
