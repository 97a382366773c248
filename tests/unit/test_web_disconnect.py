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


@pytest.mark.anyio
async def test_a_quick_answer_starts_no_watch() -> None:
    """Regression: every streamed answer started a task to watch its client and
    then cancelled it, some eight loop callbacks of each ``execute`` request
    (a warm run takes 4 ms); the watch now starts only for a slower answer."""
    import asyncio

    loop = asyncio.get_running_loop()
    created: list[object] = []
    create_task = loop.create_task

    def counted(*args: Any, **kwargs: Any) -> Any:
        created.append(args[0])
        return create_task(*args, **kwargs)

    async def receive() -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError("never")

    async def source() -> AsyncGenerator[int, None]:
        yield 1

    events = source()

    async def answer() -> None:
        async for _ in events:
            pass

    loop.create_task = counted  # type: ignore[method-assign]
    try:
        with anyio.fail_after(10):
            left = await stream_while_connected(receive, answer, events)
    finally:
        del loop.create_task
    assert left is False and created == []


def test_a_slow_answer_is_watched_on_a_plain_asyncio_loop() -> None:
    """The watch starts from a callback of the event loop: on a loop that anyio
    did not start (uvicorn's), anyio must still find it there (it did not: the
    watch never started, and a run whose client left went on)."""
    import asyncio

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def source() -> AsyncGenerator[int, None]:
        yield 1

    async def answer() -> None:
        await anyio.sleep_forever()  # a run that prints nothing

    async def main() -> bool:
        return await asyncio.wait_for(stream_while_connected(receive, answer, source()), 10)

    assert asyncio.run(main()) is True
