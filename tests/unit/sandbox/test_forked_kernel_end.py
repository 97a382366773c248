"""Regression: two tasks awaiting a forked kernel's end at once (the supervisor's
watch and a restart's kill) both read the broker's socket, and anyio refused the
second ("Another task is already reading from this resource"): a restart of a
forked kernel failed with BusyResourceError."""

from __future__ import annotations

import socket

import anyio
import pytest

from lmc_runtime.sandbox.forks import ForkedKernel


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _kernel(broker: socket.socket) -> ForkedKernel:
    return ForkedKernel(12345, -1, broker, None, -1)  # type: ignore[arg-type]  # no holder


@pytest.mark.anyio
async def test_many_tasks_wait_for_the_end_of_one_forked_kernel() -> None:
    ours, broker = socket.socketpair()
    kernel = _kernel(ours)
    done: list[int | None] = []

    async def wait() -> None:
        await kernel.ended()
        done.append(kernel.returncode)

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(wait)
                await anyio.wait_all_tasks_blocked()
                broker.send(b'{"status": 512}')
        assert done == [2, 2, 2]
    finally:
        ours.close()
        broker.close()


@pytest.mark.anyio
async def test_a_waiter_cancelled_while_reading_hands_the_reading_on() -> None:
    ours, broker = socket.socketpair()
    kernel = _kernel(ours)
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                reader = anyio.CancelScope()

                async def first() -> None:
                    with reader:
                        await kernel.ended()

                tg.start_soon(first)
                await anyio.wait_all_tasks_blocked()
                tg.start_soon(kernel.ended)
                await anyio.wait_all_tasks_blocked()
                reader.cancel()
                await anyio.wait_all_tasks_blocked()
                broker.send(b'{"status": 0}')
        assert kernel.returncode == 0
    finally:
        ours.close()
        broker.close()
