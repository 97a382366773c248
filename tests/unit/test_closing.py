"""closing_task_group: when its block ends (normally, by an error or cancelled),
``close()`` runs to its end while the group's tasks still run; then they are
cancelled."""

from __future__ import annotations

import anyio
import pytest

from lmc_runtime.closing import closing_task_group

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Watch:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.started = anyio.Event()

    async def task(self) -> None:
        self.started.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.events.append("task cancelled")

    async def close(self) -> None:
        await anyio.lowlevel.checkpoint()  # a cancelled scope would cut it here
        self.events.append("closed")


async def test_close_then_cancel_when_the_block_ends() -> None:
    watch = _Watch()
    with anyio.fail_after(10):
        async with closing_task_group(watch.close) as tg:
            tg.start_soon(watch.task)
            await watch.started.wait()
    assert watch.events == ["closed", "task cancelled"]


async def test_an_error_in_the_block_still_closes_and_is_raised() -> None:
    watch = _Watch()
    with (
        anyio.fail_after(10),
        pytest.RaisesGroup(ValueError, allow_unwrapped=True, flatten_subgroups=True),
    ):
        async with closing_task_group(watch.close) as tg:
            tg.start_soon(watch.task)
            await watch.started.wait()
            raise ValueError("the block failed")
    assert watch.events == ["closed", "task cancelled"]


async def test_a_cancelled_block_still_closes_to_the_end() -> None:
    watch = _Watch()
    with anyio.fail_after(10):
        with anyio.CancelScope() as outer:
            async with closing_task_group(watch.close) as tg:
                tg.start_soon(watch.task)
                await watch.started.wait()
                outer.cancel()
                await anyio.sleep_forever()
    assert outer.cancelled_caught
    # The outer cancellation reaches the group's tasks too; close is not cut short.
    assert sorted(watch.events) == ["closed", "task cancelled"]
