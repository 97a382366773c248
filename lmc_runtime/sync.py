"""The sync layer: a blocking portal that is safe to interrupt while it starts, an
async message stream pulled through it (:mod:`.sync_stream`), and
:class:`PortalHost`, the lifecycle ``Computer`` and ``RemoteComputer`` share:
one async core, opened by ``async with`` or, on first sync use, in a portal of
its own.

Each message is one task in the portal's event loop, so a caller that stops
reading, or is interrupted by a signal in its own thread, never leaves the
stream half-run: the pending step is cancelled in the loop (which stops the
code) and the stream is closed.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, AsyncExitStack, ExitStack
from typing import Self

import anyio
from anyio.from_thread import BlockingPortal

from .errors import UsageError
from .sync_stream import iterate_in_portal, register_loop

__all__ = ["PortalHost", "iterate_in_portal", "start_portal"]


def _wait_uninterrupted(
    future: Future[BlockingPortal],
) -> tuple[BlockingPortal, BaseException | None]:
    """The portal ``future`` gives, and the interruption (Ctrl-C) that came meanwhile."""
    interrupted: BaseException | None = None
    while True:
        try:
            return future.result(), interrupted
        except BaseException as exc:
            # The event loop failed to start: that is the error. Regression: a
            # Ctrl-C that came as the portal was ready was taken for that failure,
            # and the portal was never stopped (its thread lived on).
            if future.done() and future.exception() is not None:
                raise
            interrupted = interrupted or exc


@contextlib.contextmanager
def start_portal() -> Iterator[BlockingPortal]:
    """An event loop in a daemon thread, and the blocking portal into it.

    Regression: with anyio's ``start_blocking_portal``, a Ctrl-C while it waited
    for the portal left that portal never stopped, and its thread was joined
    forever (the process hung). Here an interruption during the start is held
    until the portal exists, the portal is stopped, and then it is raised.
    """
    future: Future[BlockingPortal] = Future()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            register_loop(portal)
            future.set_result(portal)
            await portal.sleep_until_stopped()

    def main() -> None:
        try:
            anyio.run(serve, backend="asyncio")
        except BaseException as exc:
            if not future.done():
                future.set_exception(exc)

    thread = threading.Thread(target=main, daemon=True, name="lmc-portal")
    thread.start()
    portal, interrupted = _wait_uninterrupted(future)
    failed = interrupted is not None
    try:
        if interrupted is not None:
            raise interrupted
        yield portal
    except BaseException:
        failed = True
        raise
    finally:
        # Closed by the collector as the interpreter exits (a Computer never closed, held
        # by a module's global): the portal's daemon thread no longer runs, and a call
        # would wait for it for good. The atexit hook of what it owned has ended it.
        if not sys.is_finalizing():
            with contextlib.suppress(RuntimeError):
                portal.call(portal.stop, failed)
            thread.join()


class PortalHost:
    """An async lifespan (:meth:`_lifespan`, given by the subclass) opened by ``async
    with`` or, on first sync use, in a blocking portal of its own; ``aclose`` or
    ``close`` ends it, and it cannot be opened again. ``_noun`` names the class in
    the errors its misuse raises."""

    _noun = "object"
    _stack: AsyncExitStack | None = None
    _sync: ExitStack | None = None
    _portal: BlockingPortal | None = None
    _closed: bool = False

    def _lifespan(self) -> AbstractAsyncContextManager[None]:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        if self._stack is not None or self._portal is not None:
            raise UsageError(f"this {self._noun} is already open")
        stack = AsyncExitStack()
        await stack.enter_async_context(self._lifespan())
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the lifespan opened by ``async with``."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()
        self._closed = True

    def _ensure_portal(self) -> BlockingPortal:
        if self._portal is None:
            if self._stack is not None:
                raise UsageError(f"this {self._noun} is open in async code: use arun, not run")
            if self._closed:
                raise UsageError(f"this {self._noun} is closed; create a new one")
            with ExitStack() as sync:  # unwound if the start fails or is interrupted
                portal = sync.enter_context(start_portal())
                sync.enter_context(portal.wrap_async_context_manager(self._lifespan()))
                self._sync, self._portal = sync.pop_all(), portal
        return self._portal

    def __enter__(self) -> Self:
        self._ensure_portal()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """End the lifespan (the sync form of :meth:`aclose`)."""
        sync, self._sync, self._portal = self._sync, None, None
        if sync is not None:
            sync.close()
        self._closed = True
