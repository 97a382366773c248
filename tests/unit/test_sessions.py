"""lmc_runtime.sessions.Sessions: one start per language, interrupted starts, closing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from lmc_runtime.backends.base import ExecutionOptions
from lmc_runtime.messages import Message
from lmc_runtime.sessions import Sessions

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class FakeSession:
    def __init__(self, language: str, fail_close: bool = False) -> None:
        self.language = language
        self.interrupts = 0
        self.restarts = 0
        self.closed = False
        self.fail_close = fail_close

    async def execute(self, code: str, options: ExecutionOptions) -> AsyncIterator[Message]:
        yield Message.computer("console", "active_line", None)

    async def interrupt(self) -> None:
        self.interrupts += 1

    async def restart(self) -> None:
        self.restarts += 1

    async def aclose(self) -> None:
        self.closed = True
        if self.fail_close:
            raise RuntimeError("cannot close")


async def test_concurrent_runs_share_one_start() -> None:
    started: list[str] = []
    gate = anyio.Event()

    async def start(name: str) -> Any:
        started.append(name)
        await gate.wait()
        return FakeSession(name)

    sessions = Sessions(start)
    got: list[Any] = []
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(lambda: _collect(sessions, "python", got))
        await anyio.wait_all_tasks_blocked()
        gate.set()
    assert started == ["python"]
    assert len({id(s) for s in got}) == 1 and "python" in sessions


async def _collect(sessions: Sessions, name: str, into: list[Any]) -> None:
    into.append(await sessions.get(name))


async def test_an_interrupt_while_starting_stops_the_waiting_runs_only() -> None:
    gate = anyio.Event()

    async def start(name: str) -> Any:
        await gate.wait()
        return FakeSession(name)

    sessions = Sessions(start)
    got: list[Any] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _collect(sessions, "python", got))
        await anyio.wait_all_tasks_blocked()
        await sessions.interrupt("shell")  # another language: no effect
        await sessions.interrupt(None)
        gate.set()
    assert got == [None], "the waiting run learns it was interrupted"
    session = await sessions.get("python")
    assert isinstance(session, FakeSession), "the session itself started and serves later runs"
    await sessions.interrupt("python")
    assert session.interrupts == 1


async def test_restart_and_close_reach_every_started_session() -> None:
    made: dict[str, FakeSession] = {}

    async def start(name: str) -> Any:
        made[name] = FakeSession(name, fail_close=name == "shell")
        return made[name]

    sessions = Sessions(start)
    await sessions.restart("python")  # never started: nothing to do
    await sessions.get("python")
    await sessions.get("shell")
    await sessions.restart("python")
    assert made["python"].restarts == 1
    await sessions.close()  # one failure is logged, the others still close
    assert made["python"].closed and made["shell"].closed
    assert "python" not in sessions
