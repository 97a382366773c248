"""ZMQ contexts shared by the kernels of a backend's sessions.

A ZMQ context is two threads (its I/O thread and its reaper) and five
descriptors, and some 40 KiB; jupyter_client gives each kernel manager one of
its own. A server's sessions share their backends (one registry per Python), so
their kernels share contexts here, :data:`KERNELS_PER_CONTEXT` to a context:
its I/O thread carries those kernels' messages (unix sockets, a few a run). A
kernel holds some 18 of a context's sockets (its channels, their monitors, the
manager's control socket); a context takes :data:`SOCKETS` (ZMQ's default is
1,023: some 55 kernels). A context lives while a kernel uses it: the last one's
end ends it (in a worker thread: that joins its I/O thread). Each kernel closes
its own sockets; ending the context closes any left.
"""

from __future__ import annotations

import threading

import anyio
import zmq
import zmq.asyncio

__all__ = ["KERNELS_PER_CONTEXT", "SOCKETS", "SharedContext"]

#: How many kernels share one context at most.
KERNELS_PER_CONTEXT = 64
#: The sockets a shared context may have (ZMQ's ``MAX_SOCKETS``).
SOCKETS = 4096


class SharedContext:
    """ZMQ contexts shared by the kernels that hold them (:meth:`take`,
    :meth:`give_back`), each made by its first and ended by its last."""

    def __init__(self) -> None:
        # Sessions of one registry may run in more than one thread (sync Computers).
        self._lock = threading.Lock()
        #: The contexts in use, with how many kernels hold each.
        self._held: dict[zmq.asyncio.Context, int] = {}

    @property
    def users(self) -> int:
        """How many kernels hold a context now."""
        return sum(self._held.values())

    @property
    def contexts(self) -> int:
        """How many contexts there are now."""
        return len(self._held)

    def take(self) -> zmq.asyncio.Context:
        """A context with room for one more kernel, held until :meth:`give_back`."""
        with self._lock:
            for context, users in self._held.items():
                if users < KERNELS_PER_CONTEXT:
                    self._held[context] = users + 1
                    return context
            context = zmq.asyncio.Context()
            context.set(zmq.MAX_SOCKETS, SOCKETS)
            self._held[context] = 1
            return context

    async def give_back(self, context: zmq.asyncio.Context) -> None:
        """One holder of ``context`` is done with it: the last ends it."""
        with self._lock:
            users = self._held.get(context)
            if users is None:  # ended already: never ended twice
                return
            if users > 1:
                self._held[context] = users - 1
                return
            del self._held[context]
        await anyio.to_thread.run_sync(context.destroy, 0)
