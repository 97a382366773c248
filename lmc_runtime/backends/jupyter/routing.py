"""Routes: the per-request streams a kernel's reader fills, and what can travel on them."""

from __future__ import annotations

import contextlib
import signal
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["Item", "KernelGone", "Route", "Wake", "describe_exit"]

_ROUTE_BUFFER = 1024


@dataclass(frozen=True)
class KernelGone:
    """The kernel process ended or was replaced while a request was open."""

    description: str
    exit_code: int | None = None
    intentional: bool = False
    log_tail: str = ""


class Wake:
    """Wakes a route's reader so it re-checks its deadlines."""


Item = tuple[str, dict[str, Any]] | KernelGone | Wake


class Route:
    """The stream of one request's replies, keyed by its ``msg_id``."""

    def __init__(self, msg_id: str) -> None:
        self.msg_id = msg_id
        send, receive = anyio.create_memory_object_stream[Item](_ROUTE_BUFFER)
        self._send: MemoryObjectSendStream[Item] = send
        self.receive: MemoryObjectReceiveStream[Item] = receive

    async def put(self, item: Item) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._send.send(item)

    def wake(self) -> None:
        with contextlib.suppress(
            anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError
        ):
            self._send.send_nowait(Wake())

    def close(self) -> None:
        self._send.close()
        self.receive.close()


def describe_exit(code: int | None) -> str:
    """A sentence for how a process ended, from its Popen return code."""
    if code is None:
        return "the kernel process ended"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == signal.SIGKILL:
            return "the kernel was killed by SIGKILL (often the out-of-memory killer)"
        if -code == signal.SIGSEGV:
            return "the kernel crashed with a segmentation fault (SIGSEGV)"
        return f"the kernel was killed by {name}"
    return f"the kernel exited with code {code}"
