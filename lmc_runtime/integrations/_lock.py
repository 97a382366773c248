"""One run at a time through an integration, whether its callers are threads or tasks.

Frameworks run a model's tool calls in parallel: LangChain's ``batch`` in a
thread pool, ``abatch`` (and LangGraph's ``ToolNode``) as concurrent tasks. A
remote session refuses a second run while one runs, so an integration queues
its runs instead, and a sync caller in a thread and an async caller in an event
loop must wait on the same lock.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio

__all__ = ["RunLock"]


class RunLock:
    """A lock held for the whole of a run, taken by :meth:`held` in a thread or by
    :meth:`aheld` in a task; a task cancelled while it waits leaves it free."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock, waiting for it in this thread."""
        with self._lock:
            yield

    @asynccontextmanager
    async def aheld(self) -> AsyncIterator[None]:
        """Hold the lock, waiting for it without blocking the event loop."""
        if not self._lock.acquire(blocking=False):
            await _Waiter(self._lock).wait()
        try:
            yield
        finally:
            self._lock.release()


class _Waiter:
    """Waits for ``lock`` in a worker thread of its own (not one of the default
    limiter's, which the run holding the lock may need). If the waiting task is
    cancelled first, the thread hands the lock back as soon as it gets it."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._guard = threading.Lock()
        self._got = False
        self._abandoned = False

    def _take(self) -> None:
        self._lock.acquire()
        with self._guard:
            if self._abandoned:
                self._lock.release()
            else:
                self._got = True

    async def wait(self) -> None:
        own_thread = anyio.CapacityLimiter(1)
        try:
            await anyio.to_thread.run_sync(self._take, abandon_on_cancel=True, limiter=own_thread)
        except BaseException:
            with self._guard:
                self._abandoned = True
                if self._got:
                    self._lock.release()
            raise
