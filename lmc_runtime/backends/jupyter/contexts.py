"""One ZMQ context for the kernels of a backend's sessions.

A ZMQ context is two threads (its I/O thread and its reaper) and five
descriptors, and some 40 KiB; jupyter_client gives each kernel manager one of
its own. A server's sessions share their backends (one registry per Python), so
the kernels of all of them share one context here: its I/O thread carries every
kernel's messages (unix sockets, a few a run). The context lives while a kernel
uses it: the last one's end ends it (in a worker thread: that joins its I/O
thread), and the next kernel makes a new one. Each kernel closes its own
sockets; ending the context closes any left.
"""

from __future__ import annotations

import threading

import anyio
import zmq.asyncio

__all__ = ["SharedContext"]


class SharedContext:
    """A ZMQ context shared by the kernels that hold it (:meth:`take`,
    :meth:`give_back`), made by the first and ended by the last."""

    def __init__(self) -> None:
        # Sessions of one registry may run in more than one thread (sync Computers).
        self._lock = threading.Lock()
        self._context: zmq.asyncio.Context | None = None
        self._users = 0

    @property
    def users(self) -> int:
        """How many kernels hold the context now."""
        return self._users

    def take(self) -> zmq.asyncio.Context:
        """The context, held until :meth:`give_back`."""
        with self._lock:
            if self._context is None:
                self._context = zmq.asyncio.Context()
            self._users += 1
            return self._context

    async def give_back(self, context: zmq.asyncio.Context) -> None:
        """One holder of ``context`` is done with it: the last ends it."""
        with self._lock:
            if context is not self._context:  # ended already: never ended twice
                return
            self._users -= 1
            if self._users:
                return
            self._context = None
        await anyio.to_thread.run_sync(context.destroy, 0)
