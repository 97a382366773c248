"""Where node's events go: the open request's route, or the late-output buffer."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .protocol import Done, Line, Output

__all__ = ["Gone", "LateOutput", "Route"]

_ROUTE_BUFFER = 1024
_LATE_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Gone:
    """The node process ended, or was replaced, while a request was open."""

    description: str
    exit_code: int | None = None
    intentional: bool = False
    #: For an intentional restart: the execution status it means (restarted, timeout...).
    status: str = "restarted"
    #: The code itself ended node (``process.exit()``).
    exited_by_code: bool = False


RouteItem = Output | Line | Done


class Route:
    """The events of one request, in order; ``finished`` is set by the reader, not the caller."""

    def __init__(self, request: int) -> None:
        self.request = request
        send, receive = anyio.create_memory_object_stream[RouteItem](_ROUTE_BUFFER)
        self._send: MemoryObjectSendStream[RouteItem] = send
        self.receive: MemoryObjectReceiveStream[RouteItem] = receive
        self.finished = anyio.Event()
        #: Set when the request finished, or when someone asked it to stop: one
        #: event for the watchdog to wait on.
        self.attention = anyio.Event()
        #: Why the stream ended without a ``Done``, once it did.
        self.gone: Gone | None = None

    async def put(self, item: RouteItem) -> None:
        if isinstance(item, Done):
            self.finished.set()
            self.attention.set()
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._send.send(item)

    def end(self, gone: Gone) -> None:
        """Node is gone: what was queued is still read, then the stream ends."""
        if not self.finished.is_set():
            self.gone = gone
        self.finished.set()
        self.attention.set()
        self._send.close()

    def close(self) -> None:
        self._send.close()
        self.receive.close()


class LateOutput:
    """Output that came while no request was open, tagged with the request it follows."""

    def __init__(self) -> None:
        self._items: list[tuple[str, str, str]] = []
        self._size = 0
        self.dropped = 0
        #: The ``reply_to`` of the last request, which late output belongs to.
        self.tag: str | None = None

    def keep(self, output: Output) -> None:
        if self.tag is None:
            return
        size = len(output.text.encode("utf-8"))
        if self._size + size > _LATE_LIMIT:
            self.dropped += size
            return
        self._size += size
        self._items.append((self.tag, output.stream, output.text))

    def take(self) -> tuple[list[tuple[str, str, str]], int]:
        """(tag, stream, text) items and the number of bytes dropped; then empty."""
        items, dropped = self._items, self.dropped
        self._items, self._size, self.dropped = [], 0, 0
        return items, dropped
