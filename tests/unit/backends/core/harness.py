"""A session of the fake backend on the real core, and ways to read its runs."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio

from lmc_runtime.backends import ExecutionOptions, SessionSettings
from lmc_runtime.backends.core import SupervisedSession
from lmc_runtime.config import Timeouts
from lmc_runtime.messages import Message

from ....fakes import FakeBackend, FakeInterpreter

#: No test of the core needs more than this; a wedge fails it instead of hanging.
LIMIT = 5.0


@dataclass
class Harness:
    session: SupervisedSession
    backend: FakeBackend

    @property
    def fake(self) -> FakeInterpreter:
        """The interpreter launched last."""
        return self.backend.current

    def execute(
        self, code: str, reply_to: str = "c1", **options: Any
    ) -> AsyncGenerator[Message, None]:
        """One run's messages; closing them early stops it, as a caller that leaves does."""
        run = self.session.execute(code, ExecutionOptions(reply_to, **options))
        return cast(AsyncGenerator[Message, None], run)

    async def run(self, code: str, reply_to: str = "c1", **options: Any) -> list[Message]:
        """Every message of one run."""
        return [m async for m in self.execute(code, reply_to, **options)]


def settings(tmp_path: Path) -> SessionSettings:
    return SessionSettings(
        cwd=tmp_path, work_dir=tmp_path / "work", timeouts=Timeouts(startup=LIMIT)
    )


@asynccontextmanager
async def started(tmp_path: Path, backend: FakeBackend | None = None) -> AsyncIterator[Harness]:
    """A started session of ``backend`` (a plain :class:`FakeBackend` by default)."""
    backend = backend or FakeBackend()
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            session = await backend.start(tg, settings(tmp_path))
            try:
                yield Harness(session, backend)
            finally:
                await session.aclose()
                tg.cancel_scope.cancel()


def extras(message: Message) -> dict[str, Any]:
    return dict(message.extras or {})


def outputs(messages: list[Message]) -> list[Any]:
    """The content of every output message, in order."""
    return [m.content for m in messages if m.format == "output"]


def finals(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.is_final]


async def until(stream: AsyncIterator[Message], wanted: Any) -> list[Message]:
    """Messages of ``stream`` up to and including the first for which ``wanted`` holds."""
    seen: list[Message] = []
    async for message in stream:
        seen.append(message)
        if wanted(message):
            return seen
    raise AssertionError(f"the run ended without the message wanted: {seen}")
