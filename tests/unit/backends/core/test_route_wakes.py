"""A run's caller waiting on its route is woken once per item it reads, and never
for news the route keeps to itself."""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from typing import Any

import anyio
import pytest

from lmc_runtime.backends.core import Finished, Output
from lmc_runtime.backends.core.items import Begun, Gone
from lmc_runtime.backends.core.route import Route
from lmc_runtime.backends.jupyter.execution import KernelRoute
from lmc_runtime.backends.jupyter.items import Progress

pytestmark = pytest.mark.anyio

#: Bounds every wait: only a hang comes near it.
GUARD = 10.0


class _Counted:
    """Awaits ``coro``, counting the times it is run (its start and each resumption)."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro = coro
        self.runs = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        value = None
        while True:
            self.runs += 1
            try:
                yielded = self._coro.send(value)
            except StopIteration as stop:
                return stop.value
            value = yield yielded


async def _taken(route: Route, counted: _Counted, into: list[Any]) -> None:
    into.append(await counted)


async def test_a_waiting_take_is_resumed_once_for_the_item_put() -> None:
    """Guards the saved turn: a take that must wait is run twice (its start, the
    item), where anyio's ``receive`` first passed a checkpoint (three runs, and as
    many resumptions of every stream above the route)."""
    route = Route("run", "c1")
    counted = _Counted(route.take())
    taken: list[Any] = []
    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_taken, route, counted, taken)
            await anyio.wait_all_tasks_blocked()
            await route.put(Output("1\n"))
    assert taken == [Output("1\n")] and counted.runs == 2


@pytest.mark.parametrize("how", ["end", "leave", "close"])
async def test_a_waiting_take_ends_when_the_route_does(how: str) -> None:
    route = Route("run", "c1")
    errors: list[type[BaseException]] = []

    async def take() -> None:
        try:
            await route.take()
        except (anyio.EndOfStream, anyio.ClosedResourceError) as exc:
            errors.append(type(exc))

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(take)
            await anyio.wait_all_tasks_blocked()
            if how == "end":
                route.end(Gone("it stopped"))
            else:
                getattr(route, how)()
    expected = anyio.EndOfStream if how == "end" else anyio.ClosedResourceError
    assert errors == [expected]


async def test_a_cancelled_take_leaves_the_next_item_to_the_next_take() -> None:
    route = Route("run", "c1")
    with anyio.move_on_after(0.01):
        await route.take()
    await route.put(Finished())
    with anyio.fail_after(GUARD):
        assert await route.take() == Finished()


async def test_news_for_the_route_alone_never_reaches_its_reader() -> None:
    """Guards the saved wake-ups: a kernel's progress (three of its six items a
    ``print(1)``) and the run's start are noted by the route, not read by the run."""
    route = KernelRoute("run", "c1")
    for item in (Begun(), Progress("begun"), Progress("evaluating"), Progress("idle")):
        await route.put(item)
    assert route.begun
    assert all(route.reached[state].is_set() for state in ("begun", "evaluating", "idle"))
    with pytest.raises(anyio.WouldBlock):
        route.take_nowait()
