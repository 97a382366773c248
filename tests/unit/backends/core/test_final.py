"""Every run ends with exactly one final message, last, saying how it ended."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime.replies import Status

from .harness import extras, finals, outputs, started

pytestmark = pytest.mark.anyio


async def test_a_run_ends_with_exactly_one_final_message_last(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        messages = await h.run("print a\nline 2\nprint b")
    assert len(finals(messages)) == 1 and messages[-1].is_final
    assert outputs(messages) == ["a\n", "b\n"]
    assert messages[-1].status == Status.OK


@pytest.mark.parametrize("ended", [Status.OK, Status.ERROR, Status.MEMORY_LIMIT])
async def test_the_final_status_is_the_finished_status(tmp_path: Path, ended: Status) -> None:
    async with started(tmp_path) as h:
        messages = await h.run(f"print a\nfinish {ended}")
    assert messages[-1].status == ended


async def test_finished_extras_go_into_the_final_message(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        messages = await h.run("finish error ename=ValueError evalue=bad")
    assert extras(messages[-1]) == {"status": "error", "ename": "ValueError", "evalue": "bad"}


async def test_every_message_answers_the_code_message(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        messages = await h.run("print a\nerr b\nfinish error", reply_to="code-7")
    assert {m.in_reply_to for m in messages} == {"code-7"}


async def test_a_message_item_passes_through_unchanged(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        messages = await h.run("say made by the backend")
    assert messages[0].content == "made by the backend\n"
    assert messages[0].in_reply_to == "said"


async def test_items_the_execution_does_not_know_are_dropped(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        run = h.execute("gate g")
        await h.fake.emit(object())
        h.fake.open("g")
        messages = [m async for m in run]
    assert len(messages) == 1 and messages[0].is_final


async def test_runs_of_one_session_share_one_interpreter(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        first = await h.run("print a", reply_to="c1")
        second = await h.run("print b", reply_to="c2")
    assert outputs(first) == ["a\n"] and outputs(second) == ["b\n"]
    assert len(h.backend.interpreters) == 1 and h.fake.codes == ["print a", "print b"]
