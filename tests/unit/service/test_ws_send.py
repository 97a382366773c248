"""A WebSocket connection's sends (lmc_runtime.service.ws) pass the event loop
no turn of their own."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from lmc_runtime import replies
from lmc_runtime.service.drain import Drain
from lmc_runtime.service.ws import _Connection

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Socket:
    """What the connection sends to: frames kept, sent at once."""

    def __init__(self) -> None:
        self.app = SimpleNamespace(state=SimpleNamespace(drain=Drain()))
        self.sent: list[Any] = []

    async def send_text(self, text: str) -> None:
        self.sent.append(json.loads(text))


def _connection(socket: Socket) -> _Connection:
    session = SimpleNamespace(policy=SimpleNamespace(limits=SimpleNamespace(wall_seconds=None)))
    return _Connection(socket, session, chunks=False, max_bytes=1 << 20)  # type: ignore[arg-type]


async def test_a_send_passes_the_event_loop_no_turn_of_its_own() -> None:
    """Regression: the send lock, though nobody else held it, passed the event
    loop a turn for each message a run sent (two of a ``print(1)``)."""
    socket = Socket()
    connection = _connection(socket)
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        await connection.send(replies.output("1\n", "r"))
        await connection.send(replies.active_line(None, "r", status="ok"))
        assert ran == []
    assert ran == ["other"]
    assert [frame["content"] for frame in socket.sent] == ["1\n", None]
