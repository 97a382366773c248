"""A task group that closes what runs in it before it cancels it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup

__all__ = ["closing_task_group"]


@asynccontextmanager
async def closing_task_group(close: Callable[[], Awaitable[object]]) -> AsyncIterator[TaskGroup]:
    """A task group for the block: when the block ends, however it ends, ``close()``
    is awaited (shielded, so a cancellation does not cut it short), then whatever
    still runs in the group is cancelled.

    A Computer closes its sessions this way, and ``lmc serve`` its manager.
    """
    async with anyio.create_task_group() as tg:
        try:
            yield tg
        finally:
            with anyio.CancelScope(shield=True):
                await close()
            tg.cancel_scope.cancel()
