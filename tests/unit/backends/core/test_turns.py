"""lmc_runtime.backends.core.turns: turn-taking and the between-runs news."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, cast

import anyio
import pytest

from lmc_runtime import replies
from lmc_runtime.backends.core.items import Gone
from lmc_runtime.backends.core.turns import Once, Turns, news_between_runs
from lmc_runtime.messages import Message

pytestmark = pytest.mark.anyio


class FakeRun:
    """Produces two messages; the interpreter is 'done' when ``done`` is set."""

    def __init__(self, free: Callable[[], None]) -> None:
        self.free = free
        self.complete = False
        self.stops: list[str] = []
        self.abandoned = False
        self.done = anyio.Event()

    async def watch(self) -> None:
        await self.done.wait()
        self.free()

    async def messages(self) -> AsyncIterator[Message]:
        yield replies.output("hi\n", "m")
        self.complete = True
        yield replies.active_line(None, "m", status="ok")

    async def request_stop(self, reason: str) -> None:
        self.stops.append(reason)
        self.done.set()

    def abandon(self) -> None:
        self.abandoned = True


def test_once_calls_only_once() -> None:
    calls: list[int] = []
    once = Once(lambda: calls.append(1))
    once()
    once()
    assert calls == [1]


async def test_the_next_turn_waits_until_the_interpreter_is_done() -> None:
    runs: list[FakeRun] = []
    async with anyio.create_task_group() as tg:
        turns: Turns[FakeRun] = Turns(tg.start_soon)

        async def news() -> AsyncIterator[Message]:
            yield replies.output("news\n", "m")

        async def begin(free: Callable[[], None]) -> FakeRun:
            runs.append(FakeRun(free))
            return runs[-1]

        first = [m.content async for m in turns.take(news, begin)]
        assert first == ["news\n", "hi\n", None]
        second: list[Any] = []

        async def take_second() -> None:
            second.extend([m.content async for m in turns.take(news, begin)])

        tg.start_soon(take_second)
        await anyio.wait_all_tasks_blocked()
        assert second == [], "the interpreter is not done with the first run yet"
        runs[0].done.set()
        with anyio.fail_after(10):
            while len(runs) < 2:
                await anyio.wait_all_tasks_blocked()
        runs[1].done.set()
    assert second == ["news\n", "hi\n", None]


async def test_a_caller_that_leaves_early_stops_the_code() -> None:
    runs: list[FakeRun] = []
    async with anyio.create_task_group() as tg:
        turns: Turns[FakeRun] = Turns(tg.start_soon)

        async def news() -> AsyncIterator[Message]:
            return
            yield

        async def begin(free: Callable[[], None]) -> FakeRun:
            runs.append(FakeRun(free))
            return runs[-1]

        stream = cast(AsyncGenerator[Message, None], turns.take(news, begin))
        assert (await stream.__anext__()).content == "hi\n"
        await stream.aclose()
    assert runs[0].stops == ["interrupt"]
    assert runs[0].abandoned, "what the code still prints must never block the reader"


def test_news_between_runs_reports_a_death_late_output_and_drops() -> None:
    news = news_between_runs(
        "now",
        death=Gone("the kernel was killed by SIGKILL", -9),
        late=[("before", "stdout", "late\n"), ("before", "stderr", "oops\n")],
        dropped=12,
        who="node",
    )
    assert "node has been restarted" in news[0].content
    assert (news[0].extras or {})["status"] == "kernel_died"
    assert news[1].in_reply_to == "before" and (news[1].extras or {}).get("late") is True
    assert (news[2].extras or {}).get("stream") == "stderr"
    assert (news[3].extras or {})["omitted_bytes"] == 12
    assert news_between_runs("now", death=None, late=[], dropped=0) == []
