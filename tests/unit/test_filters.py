"""A Computer's declared filters: their order, the default budget, a failing filter,
closing every stage when the caller stops early, and the budget's spill cap."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import anyio
import pytest

from lmc_runtime import Computer, Limits, replies
from lmc_runtime.backends import BackendEntry, Registry
from lmc_runtime.budget.filter import BudgetFilter
from lmc_runtime.filters import Filter, FilterHost, Run, Stream
from lmc_runtime.messages import Message
from lmc_runtime.replies import Status

from ..fakes import ScriptedBackend


def make(**kwargs: Any) -> tuple[Computer, ScriptedBackend]:
    backend = ScriptedBackend()
    registry = Registry([])
    registry.add(BackendEntry("fake", "tests.fakes:ScriptedBackend", ("scripted",)), backend)
    return Computer(registry=registry, **kwargs), backend


def tag(name: str, log: list[str]) -> Filter:
    """A filter that appends ``name`` to every output, and logs when it is closed."""

    async def apply(run: Run, stream: Stream) -> Stream:
        try:
            async for message in stream:
                if message.format == "output":
                    message = message.model_copy(update={"content": f"{message.content}{name}"})
                yield message
        finally:
            log.append(f"closed {name}")

    return apply


def test_filters_apply_in_the_order_they_are_declared() -> None:
    log: list[str] = []
    computer, _ = make(filters=[tag("1", log), tag("2", log)])
    with computer:
        messages = list(computer.run("fake", "print a"))
    assert [m.content for m in messages] == ["a\n12", None]
    assert messages[-1].is_final and messages[-1].status == Status.OK


def test_the_run_tells_a_filter_what_runs() -> None:
    seen: list[Run] = []

    async def spy(run: Run, stream: Stream) -> Stream:
        seen.append(run)
        async for message in stream:
            yield message

    computer, _ = make(filters=[spy], limits=Limits(output_bytes=1000))
    with computer:
        list(computer.run({"role": "assistant", "type": "code", "format": "scripted",
                           "content": "print a", "id": "c7"}, timeout=4))  # fmt: skip
    (run,) = seen
    assert (run.language, run.code, run.reply_to) == ("fake", "print a", "c7")
    assert run.options.timeout == 4 and run.limits.output_bytes == 1000
    assert run.computer is computer


def test_the_output_budget_is_the_default_filter_and_a_declared_list_replaces_it(
    tmp_path: Path,
) -> None:
    limits = Limits(output_bytes=4000, spill_dir=tmp_path)
    budgeted, _ = make(limits=limits)
    assert [type(f) for f in budgeted.filters] == [BudgetFilter]
    whole, _ = make(limits=limits, filters=[])
    for computer, most in ((budgeted, 5000), (whole, 100_000)):
        with computer:
            messages = list(computer.run("fake", "flood 20000"))
        text = "".join(m.content for m in messages if m.format == "output")
        assert len(text) <= most and messages[-1].is_final
    assert len(text) == 20_000  # nothing cut without the budget


def test_a_failing_filter_ends_the_run_as_a_backend_error() -> None:
    async def broken(run: Run, stream: Stream) -> Stream:
        async for message in stream:
            yield message
            raise RuntimeError("filter bug")

    computer, backend = make(filters=[broken])
    with computer:
        messages = list(computer.run("fake", "print a\nprint b"))
        again = list(computer.run("fake", "print c"))
    assert messages[0].content == "a\n"
    assert messages[-2].status == Status.BACKEND_ERROR and "filter bug" in messages[-2].content
    assert messages[-1].is_final and messages[-1].status == Status.BACKEND_ERROR
    assert [m.content for m in again][-1] is None and len(backend.sessions) == 1


def test_a_failure_after_the_final_message_adds_nothing() -> None:
    async def late(run: Run, stream: Stream) -> Stream:
        async for message in stream:
            yield message
        raise RuntimeError("after the end")

    computer, _ = make(filters=[late])
    with computer:
        messages = list(computer.run("fake", "print a"))
    assert [m.content for m in messages] == ["a\n", None]


def test_stopping_early_closes_every_stage_the_outermost_first() -> None:
    log: list[str] = []

    async def main() -> list[str]:
        computer, backend = make(filters=[tag("inner", log), tag("outer", log)])
        async with computer:
            async with contextlib.aclosing(computer.arun("fake", "print a\nwait")) as stream:
                async for message in stream:
                    assert message.content == "a\ninnerouter"
                    break
            # Closed with the caller's stream, not when the generator is collected.
            assert log == ["closed outer", "closed inner"]
            assert not backend.sessions[0].closed
        return log

    assert anyio.run(main) == ["closed outer", "closed inner"]


def test_a_filter_may_answer_in_place_of_the_final_message() -> None:
    async def verdict(run: Run, stream: Stream) -> Stream:
        async for message in stream:
            if message.is_final:
                yield replies.notice("checked", Status.CPU_LIMIT, run.reply_to)
                yield replies.active_line(None, run.reply_to, status=Status.CPU_LIMIT)
                return
            yield message

    computer, _ = make(filters=[verdict])
    with computer:
        messages: list[Message] = list(computer.run("fake", "print a"))
    assert [m.status for m in messages] == [None, Status.CPU_LIMIT, Status.CPU_LIMIT]
    assert messages[-1].is_final


@pytest.mark.parametrize(
    ("room", "spill", "capped"),
    [(None, 1000, 1000), (10, 1000, 10), (5000, 1000, 1000), (10, None, 10), (None, None, None)],
)
def test_the_budget_caps_spill_files_by_the_room_there_is(
    room: int | None, spill: int | None, capped: int | None
) -> None:
    budget = BudgetFilter(spill_room=lambda: room)
    assert budget.limits(Limits(spill_bytes=spill)).spill_bytes == capped
    assert BudgetFilter().limits(Limits(spill_bytes=spill)).spill_bytes == spill


def test_the_run_hands_filters_a_narrow_host() -> None:
    """What a filter may call of the Computer is the three methods of ``FilterHost``;
    the Computer is one (the typing test shows that nothing else type-checks)."""
    assert set(FilterHost.__dict__) >= {"astart", "ainterrupt", "arestart_all"}
    assert not {"run", "arun", "close", "languages", "registry"} & set(FilterHost.__dict__)
    computer, _ = make()
    with contextlib.closing(computer):
        assert isinstance(computer, FilterHost)
