"""A streamed answer's work ends the moment its client disconnects, whatever
the client sent before (a request body's last parts, nothing at all)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from lmc_runtime.web.disconnect import cancel_on_disconnect


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
