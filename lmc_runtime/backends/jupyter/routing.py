"""Routes: the per-request streams a kernel's reader fills, and what can travel on them."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .. import exits

__all__ = ["Item", "KernelGone", "Route", "describe_exit"]

_ROUTE_BUFFER = 1024


@dataclass(frozen=True)
class KernelGone:
    """The kernel process ended or was replaced while a request was open."""

    description: str
    exit_code: int | None = None
    intentional: bool = False
    log_tail: str = ""
    #: For an intentional restart: the execution status it means (restarted, timeout...).
    status: str = "restarted"


Item = tuple[str, dict[str, Any]] | KernelGone


class Route:
    """The stream of one request's replies, keyed by its ``msg_id``."""

    def __init__(self, msg_id: str) -> None:
        self.msg_id = msg_id
        send, receive = anyio.create_memory_object_stream[Item](_ROUTE_BUFFER)
        self._send: MemoryObjectSendStream[Item] = send
        self.receive: MemoryObjectReceiveStream[Item] = receive
        #: Set by the reader once the kernel is done with the request (idle and
        #: reply both seen), however slowly the caller reads the stream.
        self.finished = anyio.Event()
        self._idle = False
        self._replied = False

    async def put(self, item: Item) -> None:
        if isinstance(item, tuple):
            self._observe(*item)
        else:  # the kernel is gone: it will never answer this request now
            self.finished.set()
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._send.send(item)

    def _observe(self, channel: str, msg: dict[str, Any]) -> None:
        msg_type = msg["msg_type"]
        if msg_type == "status" and msg["content"].get("execution_state") == "idle":
            self._idle = True
        elif channel == "shell" and msg_type.endswith("_reply"):
            self._replied = True
        if self._idle and self._replied:
            self.finished.set()

    def close(self) -> None:
        self._send.close()
        self.receive.close()


def describe_exit(code: int | None) -> str:
    """A sentence for how the kernel ended, from its Popen return code."""
    return exits.describe_exit(code, "the kernel process" if code is None else "the kernel")
