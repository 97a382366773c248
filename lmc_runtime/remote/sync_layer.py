"""The sync layer of :class:`~lmc_runtime.remote.RemoteComputer`: its async core
driven through a blocking portal, as ``Computer``'s is."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, ExitStack
from typing import Any, Self, TypeVar

from anyio.from_thread import BlockingPortal

from ..errors import UsageError
from ..sync import start_portal

__all__ = ["SyncLayer"]

T = TypeVar("T")


class SyncLayer:
    """Opens the async lifespan in a portal on first sync use; ``close`` ends it."""

    _portal: BlockingPortal | None
    _sync: ExitStack | None
    _stack: AsyncExitStack | None
    _closed: bool

    def _lifespan(self) -> AbstractAsyncContextManager[None]:
        raise NotImplementedError

    def _ensure_portal(self) -> BlockingPortal:
        if self._portal is None:
            if self._stack is not None:
                raise UsageError("this RemoteComputer is open in async code: use arun, not run")
            if self._closed:
                raise UsageError("this RemoteComputer is closed; create a new one")
            with ExitStack() as sync:
                portal = sync.enter_context(start_portal())
                sync.enter_context(portal.wrap_async_context_manager(self._lifespan()))
                self._sync, self._portal = sync.pop_all(), portal
        return self._portal

    def _call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        return self._ensure_portal().call(func, *args)

    def _iterate(self, stream: AsyncIterator[bytes]) -> Iterator[bytes]:
        portal = self._ensure_portal()
        try:
            while True:
                try:
                    yield portal.call(stream.__anext__)
                except StopAsyncIteration:
                    return
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                portal.call(aclose)

    def __enter__(self) -> Self:
        self._ensure_portal()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the sync form of ``aclose``)."""
        sync, self._sync, self._portal = self._sync, None, None
        if sync is not None:
            sync.close()
        self._closed = True
