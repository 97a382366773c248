"""The sync layer of :class:`~lmc_runtime.remote.RemoteComputer`: its async core
driven through a blocking portal, as ``Computer``'s is."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

from ..sync import PortalHost

__all__ = ["SyncLayer"]

T = TypeVar("T")


class SyncLayer(PortalHost):
    """:class:`~lmc_runtime.sync.PortalHost`, with calls and byte streams through its portal."""

    _noun = "RemoteComputer"

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
