"""Output that arrives for a request after it finished: a thread still printing.

ipykernel parents such output to the finished request. Rather than drop it, the
last few finished requests are remembered ("retired") and their stream output
kept, within a byte limit, to be delivered with the next run.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["LateOutput"]

#: Finished requests whose late output is still accepted, and how much of it.
_RETIRED_KEPT = 16
_LATE_LIMIT = 64 * 1024


class LateOutput:
    """Late stream output of recently finished requests, bounded in bytes."""

    def __init__(self) -> None:
        self._retired: OrderedDict[str, str] = OrderedDict()
        self._kept: list[tuple[str, str, str]] = []
        self._size = 0
        self._dropped = 0

    def retire(self, msg_id: str, tag: str) -> None:
        """Accept late output for ``msg_id`` from now on, filed under ``tag``."""
        self._retired[msg_id] = tag
        while len(self._retired) > _RETIRED_KEPT:
            self._retired.popitem(last=False)

    def keep(self, parent_id: str, msg: dict[str, Any]) -> None:
        """Keep ``msg`` if it is stream output of a retired request."""
        tag = self._retired.get(parent_id)
        if tag is None or msg["msg_type"] != "stream":
            return
        text = msg["content"].get("text", "")
        if self._size + len(text) > _LATE_LIMIT:
            self._dropped += len(text)
            return
        self._kept.append((tag, msg["content"].get("name", "stdout"), text))
        self._size += len(text)

    def take(self) -> tuple[list[tuple[str, str, str]], int]:
        """Everything kept as (tag, stream name, text), and the bytes dropped."""
        kept, dropped = self._kept, self._dropped
        self._kept, self._size, self._dropped = [], 0, 0
        return kept, dropped
