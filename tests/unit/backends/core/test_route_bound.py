"""A route holds items up to the size of what they carry: past it, a reader waits
until the run's caller has taken enough, and items keep their order."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from lmc_runtime.backends.core import Finished, Output
from lmc_runtime.backends.core.route import ROUTE_CARRIES, Route, size_of

pytestmark = pytest.mark.anyio

#: Bounds every wait: only a hang comes near it.
GUARD = 10.0
HALF = "x" * (ROUTE_CARRIES // 2)


async def _put_all(route: Route, items: list[Any], done: list[Any]) -> None:
    for item in items:
        await route.put(item)
        done.append(item)


async def test_a_reader_waits_past_the_size_and_items_keep_their_order() -> None:
    route = Route("run", "c1")
    big = [Output(HALF), Output(HALF), Output(HALF)]
    put: list[Any] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_put_all, route, big, put)
        await anyio.wait_all_tasks_blocked()
        assert put == big[:2]  # the third would pass the size: its reader waits
        assert route.carried == 2 * len(HALF)
        tg.start_soon(_put_all, route, [Finished()], put)  # waits behind it, not before
        await anyio.wait_all_tasks_blocked()
        assert put == big[:2]
        with anyio.fail_after(GUARD):
            taken = [await route.take() for _ in range(4)]
    assert taken == [*big, Finished()] and put == taken
    assert route.carried == 0


async def test_an_item_larger_than_the_size_alone_goes_in() -> None:
    route = Route("run", "c1")
    with anyio.fail_after(GUARD):
        await route.put(Output("y" * (ROUTE_CARRIES + 1)))
    assert route.carried == ROUTE_CARRIES + 1


async def test_a_caller_that_leaves_frees_a_waiting_reader() -> None:
    route = Route("run", "c1")
    put: list[Any] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_put_all, route, [Output(HALF)] * 3, put)
        await anyio.wait_all_tasks_blocked()
        assert len(put) == 2
        route.leave()
        with anyio.fail_after(GUARD):
            await route.put(Output(HALF))  # dropped, never waited on
    assert len(put) == 3


async def test_what_items_carry() -> None:
    from lmc_runtime.backends.jupyter.items import Progress, Reply

    display = {"content": {"data": {"image/png": "a" * 100, "text/plain": "<Image>"}}}
    assert size_of(Reply("iopub", display)) == 107
    assert size_of(Reply("shell", {"content": {"status": "ok"}})) == 0
    assert size_of(Output("abc")) == 3
    assert size_of(Progress("idle")) == size_of(Finished()) == 0
