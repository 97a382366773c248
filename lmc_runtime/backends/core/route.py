"""Routes: the items of one run, in order, and output that came too late for its run.

Readers put items on the run's route; its messages are read at the caller's pace.
``finished`` is set by the reader, so the watchdog knows whatever that pace. The
buffer is bounded; once the caller leaves (``close``), what comes is dropped.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Any

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .items import Begun, Finished, Gone, Output

__all__ = ["LateOutput", "Route"]

_ROUTE_BUFFER = 1024
_LATE_LIMIT = 64 * 1024
#: Finished runs whose late output is still accepted.
_RETIRED_KEPT = 16
#: How much of an unfinished output line is kept as the prompt of a read.
_PROMPT_LIMIT = 400
#: Items put without waiting before the putter lets other tasks run.
_YIELD_EVERY = 16


class Route:
    """The items of one run, keyed by ``key`` (a request id, a ``msg_id``)."""

    def __init__(self, key: object, tag: str) -> None:
        self.key = key
        #: The ``reply_to`` of the run: late output is filed under it.
        self.tag = tag
        send, receive = anyio.create_memory_object_stream[Any](_ROUTE_BUFFER)
        self._send: MemoryObjectSendStream[Any] = send
        self.receive: MemoryObjectReceiveStream[Any] = receive
        self.finished = anyio.Event()
        #: Set when the run finished or someone asked it to stop: what the watchdog waits on.
        self.attention = anyio.Event()
        #: Why the stream ended without a ``Finished``, once it did.
        self.gone: Gone | None = None
        #: The unfinished last line of the run's output: the prompt of a read.
        self.tail = ""
        #: Set by each piece of output; whoever waits for quiet replaces it.
        self.activity = anyio.Event()
        #: The caller left (see :meth:`leave`).
        self.left = False
        #: The interpreter said it took the run (:class:`~.items.Begun`).
        self.begun = False
        self._unyielded = 0

    def observe(self, item: Any) -> bool:
        """Whether ``item`` ends the run; backends whose end takes two items override it."""
        return isinstance(item, Finished)

    async def put(self, item: Any) -> None:
        if isinstance(item, Begun):
            self.begun = True
            return
        if isinstance(item, Output):
            cut = item.text.rfind("\n")
            tail = item.text[cut + 1 :] if cut >= 0 else self.tail + item.text
            self.tail = tail[-_PROMPT_LIMIT:]
            self.activity.set()
        if self.observe(item):
            self.finished.set()
            self.attention.set()
        try:
            self._send.send_nowait(item)  # no loop turn while there is room
        except anyio.WouldBlock:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._send.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return
        else:
            self._unyielded += 1
            if self._unyielded >= _YIELD_EVERY:  # a flood still lets the reader's run go on
                self._unyielded = 0
                await anyio.lowlevel.checkpoint()

    def join(self, first: Output, limit: int) -> tuple[str, Any]:
        """``first`` joined with output of its stream (and its error mark) already waiting
        (up to ``limit`` characters), and the next item taken that is not such output (or None)."""
        parts, size = [first.text], len(first.text)
        while size < limit:
            try:
                item = self.receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            if (
                not isinstance(item, Output)
                or item.stream != first.stream
                or item.error != first.error
                or item.value != first.value
            ):
                return "".join(parts), item
            parts.append(item.text)
            size += len(item.text)
        return "".join(parts), None

    def end(self, gone: Gone) -> None:
        """The interpreter is gone: what was queued is still read, then the stream ends."""
        if not self.finished.is_set():
            self.gone = gone
        self.finished.set()
        self.attention.set()
        self._send.close()

    def leave(self) -> None:
        """The caller left: what still comes is dropped, never waited on."""
        self.left = True
        self.receive.close()

    def close(self) -> None:
        self._send.close()
        self.receive.close()


class LateOutput:
    """Output that came while its run was over, kept (bounded) for the next run.

    Runs are "retired" when they end: output still keyed to one of the last
    few is kept under its tag; output with no key is filed under the last run.
    """

    def __init__(self) -> None:
        self._retired: OrderedDict[object, str] = OrderedDict()
        self._last: str | None = None
        self._items: list[tuple[str, str, str]] = []
        self._size = 0
        self._dropped = 0

    def retire(self, route: Route) -> None:
        self._last = route.tag
        self._retired[route.key] = route.tag
        while len(self._retired) > _RETIRED_KEPT:
            self._retired.popitem(last=False)

    def keep(self, item: Output, key: object = None) -> None:
        tag = self._last if key is None else self._retired.get(key)
        if tag is None:
            return
        size = len(item.text.encode("utf-8", "replace"))
        if self._size + size > _LATE_LIMIT:
            self._dropped += size
            return
        self._size += size
        self._items.append((tag, item.stream, item.text))

    def take(self) -> tuple[list[tuple[str, str, str]], int]:
        """(tag, stream, text) items and the number of bytes dropped; then empty."""
        items, dropped = self._items, self._dropped
        self._items, self._size, self._dropped = [], 0, 0
        return items, dropped
