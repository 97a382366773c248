"""Fixtures for sandbox tests: real bwrap sandboxes, started and torn down per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime import Computer, Message
from lmc_runtime.sandbox import Sandbox, SandboxPolicy, sandbox_available

pytestmark = pytest.mark.integration

needs_bwrap = pytest.mark.skipif(
    not sandbox_available().available, reason=f"no sandbox: {sandbox_available().reason}"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def run(computer: Computer, code: str, language: str = "python") -> list[Message]:
    return [m async for m in computer.arun(language, code)]


def text(messages: list[Message]) -> str:
    return "".join(str(m.content) for m in messages if m.type == "console" and m.format == "output")


def statuses(messages: list[Message]) -> list[Any]:
    return [(m.extras or {}).get("status") for m in messages if m.extras]


Opener = Callable[..., AbstractAsyncContextManager[tuple[Sandbox, Computer]]]


@pytest.fixture(autouse=True)
def _reachable_tmp_path(tmp_path: Path) -> None:
    """Sandboxes run as host uids of their own: they must pass through the
    folders above their session directory (search permission only)."""
    for folder in [tmp_path, *tmp_path.parents]:
        mode = folder.stat().st_mode
        if not mode & 0o001:
            folder.chmod((mode & 0o7777) | 0o001)


@pytest.fixture
def sandboxed(tmp_path: Path) -> Opener:
    """``async with sandboxed(policy) as (sandbox, computer)``: a started sandbox."""
    count = 0

    @asynccontextmanager
    async def open_one(
        policy: SandboxPolicy | None = None, **kwargs: Any
    ) -> AsyncIterator[tuple[Sandbox, Computer]]:
        nonlocal count
        count += 1
        sandbox = Sandbox(tmp_path / f"s{count}", policy or SandboxPolicy(), **kwargs)
        await sandbox.start()
        try:
            async with sandbox.computer() as computer:
                yield sandbox, computer
        finally:
            await sandbox.aclose()

    return open_one
