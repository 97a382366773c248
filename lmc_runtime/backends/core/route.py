"""Routes: the items of one run, in order, and output that came too late for its run.

Readers put items on the run's route; its messages are read at the caller's pace.
``finished`` is set by the reader, so the watchdog knows whatever that pace. The
buffer is bounded, in items and in the size of what they carry (output's text,
a display's data: see :func:`size_of`): a reader that would pass either waits,
and what the interpreter sends meanwhile waits where it is (a Python kernel's
IOPub: in the kernel). Regression: ipykernel sends 0.2 s of a ``print`` loop as
one message of some 10 MiB, and a caller that fell behind left the server
holding 900 MiB of them. Once the caller leaves (``close``), what comes is dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .items import Begun, Finished, Gone, Output

__all__ = ["LateOutput", "Route", "size_of"]

_ROUTE_BUFFER = 1024
#: The size of what a route's items may carry before a reader waits (characters).
ROUTE_CARRIES = 4 * 1024 * 1024
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
        #: The size of what the items not read yet carry (:func:`size_of`).
        self.carried = 0
        self._room = anyio.Event()
        self._waiting = 0
        self._shut = False  # either end closed: nothing waits for room
        self._turns = anyio.Lock()  # fair: items that waited keep their order
        #: Set when an item came (or the stream ended) while the caller waited.
        self._arrived: anyio.Event | None = None

    def observe(self, item: Any) -> bool:
        """Whether ``item`` ends the run; backends whose end takes two items override it."""
        return isinstance(item, Finished)

    def absorb(self, item: Any) -> bool:
        """Take in ``item`` if it is news for the route alone, never read by the caller
        (True then). Regression: each such item woke the caller's whole chain of
        streams for nothing (three of a Python kernel's six items a run)."""
        if isinstance(item, Begun):
            self.begun = True
            return True
        return False

    async def put(self, item: Any) -> None:
        if self.absorb(item):
            return
        if isinstance(item, Output):
            cut = item.text.rfind("\n")
            tail = item.text[cut + 1 :] if cut >= 0 else self.tail + item.text
            self.tail = tail[-_PROMPT_LIMIT:]
            self.activity.set()
        if self.observe(item):
            self.finished.set()
            self.attention.set()
        size = size_of(item)
        if self._waiting or self._full(size):
            await self._put_in_turn(item, size)
            return
        try:
            self._send.send_nowait(item)  # no loop turn while there is room
        except anyio.WouldBlock:
            await self._put_in_turn(item, size)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return
        else:
            self.carried += size
            self._wake()
            self._unyielded += 1
            if self._unyielded >= _YIELD_EVERY:  # a flood still lets the reader's run go on
                self._unyielded = 0
                await anyio.lowlevel.checkpoint()

    def _full(self, size: int) -> bool:
        """Whether an item of ``size`` must wait: one alone always fits."""
        return bool(size and self.carried and self.carried + size > ROUTE_CARRIES)

    async def _put_in_turn(self, item: Any, size: int) -> None:
        """Put ``item`` once the caller has read enough, after the items waiting before it."""
        self._waiting += 1
        try:
            async with self._turns:
                while self._full(size) and not self._shut:
                    if self._room.is_set():
                        self._room = anyio.Event()
                    await self._room.wait()
                self.carried += size  # before: the caller may take it before this resumes
                sent = False
                try:
                    await self._send.send(item)
                    sent = True
                    self._wake()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                finally:
                    if not sent:
                        self.carried -= size
        finally:
            self._waiting -= 1

    def _took(self, item: Any) -> Any:
        """``item``, taken by the caller: what it carried makes room."""
        size = size_of(item)
        if size:
            self.carried -= size
            self._room.set()
        return item

    def take_nowait(self) -> Any:
        """The next item, if one is there (``receive_nowait``'s errors otherwise)."""
        return self._took(self.receive.receive_nowait())

    async def take(self) -> Any:
        """The next item (``receive_nowait``'s errors at the end).

        It waits for a put, not through ``receive``, whose checkpoint cost every
        wait a turn of the event loop and a resumption of the caller's streams.
        """
        while True:
            try:
                return self.take_nowait()
            except anyio.WouldBlock:
                pass
            arrived = self._arrived = anyio.Event()
            try:
                await arrived.wait()
            finally:
                self._arrived = None

    def _wake(self) -> None:
        """Wake the caller waiting in :meth:`take`, if one is."""
        if self._arrived is not None:
            self._arrived.set()

    def join(self, first: Output, limit: int) -> tuple[str, Any]:
        """``first`` joined with output of its stream (and its error mark) already waiting
        (up to ``limit`` characters), and the next item taken that is not such output (or None)."""
        parts, size = [first.text], len(first.text)
        while size < limit:
            try:
                item = self.take_nowait()
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
        self._shut_down()

    def leave(self) -> None:
        """The caller left: what still comes is dropped, never waited on."""
        self.left = True
        self.receive.close()
        self._shut_down()

    def close(self) -> None:
        self._send.close()
        self.receive.close()
        self._shut_down()

    def _shut_down(self) -> None:
        self._shut = True
        self._room.set()
        self._wake()


def size_of(item: Any) -> int:
    """The size of what ``item`` carries: an output's text, or an item's own ``size``
    (a Jupyter kernel's display); 0 for an item that carries none."""
    if isinstance(item, Output):
        return len(item.text)
    size = getattr(item, "size", 0)
    return size if isinstance(size, int) else 0


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
