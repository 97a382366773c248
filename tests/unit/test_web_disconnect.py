"""A streamed answer's work ends the moment its client disconnects, whatever
the client sent before (a request body's last parts, nothing at all)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anyio
import pytest

from lmc_runtime.web.disconnect import cancel_on_disconnect, stream_while_connected


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_answer_is_cancelled_when_the_client_disconnects() -> None:
    sender, messages = anyio.create_memory_object_stream[dict[str, Any]](10)

    async def receive() -> dict[str, Any]:
        return await messages.receive()

    finished: list[str] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_on_disconnect, receive, tg.cancel_scope)

            async def answer() -> None:
                await anyio.sleep_forever()
                finished.append("answer")  # never: the client left

            tg.start_soon(answer)
            await sender.send({"type": "http.request", "body": b"", "more_body": False})
            await anyio.wait_all_tasks_blocked()
            assert not tg.cancel_scope.cancel_called
            await sender.send({"type": "http.disconnect"})
    assert tg.cancel_scope.cancel_called and finished == []


@pytest.mark.anyio
@pytest.mark.parametrize("client_leaves", [True, False])
async def test_a_streamed_answer_closes_its_source_however_it_ends(client_leaves: bool) -> None:
    sender, messages = anyio.create_memory_object_stream[dict[str, Any]](10)
    closed: list[str] = []
    sent: list[int] = []

    async def receive() -> dict[str, Any]:
        return await messages.receive()

    async def source() -> AsyncGenerator[int, None]:
        try:
            for n in range(3):
                yield n
            if client_leaves:
                await anyio.sleep_forever()  # a run that prints nothing more
        finally:
            closed.append("source")

    events = source()

    async def answer() -> None:
        async for n in events:
            sent.append(n)
            if n == 2 and client_leaves:
                await sender.send({"type": "http.disconnect"})

    with anyio.fail_after(10):
        left = await stream_while_connected(receive, answer, events)
    assert left is client_leaves
    assert sent == [0, 1, 2] and closed == ["source"]
