"""The output budget: head and tail within a byte limit, the whole output on disk.

The first half of the budget streams out as it comes (the head). Past it,
output is withheld. If the execution ends within the budget, the withheld part
is sent whole. If it goes past the budget, every byte goes to a file, only the
last half-budget stays in memory (the tail), and at the end the tail is sent
after an "N bytes omitted" marker that gives the file's path. Memory stays flat
however much the code prints.
"""

from __future__ import annotations

import os
import tempfile
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import anyio

from . import replies
from .config import Limits
from .messages import Message

__all__ = ["OutputBudget", "Truncation", "within_budget"]


def _size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` that fits in ``limit`` UTF-8 bytes."""
    if text.isascii():
        return text[:limit]
    return text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


def _suffix(text: str, limit: int) -> str:
    """The longest suffix of ``text`` that fits in ``limit`` UTF-8 bytes."""
    if limit <= 0:
        return ""
    if text.isascii():
        return text[-limit:]
    return text.encode("utf-8", "surrogatepass")[-limit:].decode("utf-8", "ignore")


@dataclass(frozen=True)
class Truncation:
    """What :meth:`OutputBudget.finish` hands back: withheld text, maybe cut.

    ``path`` is None (and ``omitted`` 0) when the output stayed within the budget.
    """

    text: str
    omitted: int
    total: int
    path: Path | None


class OutputBudget:
    """Keeps one execution's console output within ``limit`` bytes."""

    def __init__(self, limit: int, spill_dir: Path | None, name: str) -> None:
        self._limit = limit
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._spill_dir = spill_dir
        self._name = name
        self._head: list[str] = []
        self._head_size = 0
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self._total = 0
        self._file: IO[str] | None = None
        self.path: Path | None = None

    @property
    def exceeded(self) -> bool:
        return self._file is not None

    def feed(self, text: str) -> str:
        """The part of ``text`` to send now ("" once past the head)."""
        self._total += _size(text)
        sent = ""
        if not self._tail and self._head_size < self._head_limit:
            sent = _prefix(text, self._head_limit - self._head_size)
            self._head_size += _size(sent)
        rest = text[len(sent) :]
        if self._file is not None:
            self._file.write(text)
            self._keep(rest)
            return sent
        if sent:
            self._head.append(sent)
        self._keep(rest)
        if self._total > self._limit:
            self._open()
        return sent

    def finish(self) -> Truncation | None:
        """Close the file; the withheld text (with its marker if cut), or None."""
        if self._file is None:
            if not self._tail:
                return None
            text = "".join(self._tail)
            self._tail.clear()
            return Truncation(text, 0, self._total, None)
        self._file.close()
        tail = _suffix("".join(self._tail), self._tail_limit)
        omitted = self._total - self._head_size - _size(tail)
        marker = (
            f"\n[... {omitted} bytes omitted; the whole output ({self._total} bytes) "
            f"is saved in {self.path} ...]\n"
        )
        return Truncation(marker + tail, omitted, self._total, self.path)

    def _open(self) -> None:
        directory = self._spill_dir or Path(tempfile.gettempdir()) / "lmc-runtime-output"
        directory.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"{self._name}-", suffix=".txt", dir=directory)
        self.path = Path(name)
        self._file = os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass")
        for chunk in (*self._head, *self._tail):
            self._file.write(chunk)
        self._head.clear()
        self._trim()

    def _keep(self, text: str) -> None:
        if not text:
            return
        self._tail.append(text)
        self._tail_size += _size(text)
        if self._file is not None:
            self._trim()

    def _trim(self) -> None:
        while len(self._tail) > 1 and self._tail_size - _size(self._tail[0]) >= self._tail_limit:
            self._tail_size -= _size(self._tail.popleft())
        if len(self._tail) == 1 and self._tail_size > 2 * self._tail_limit:
            kept = _suffix(self._tail[0], self._tail_limit)
            self._tail[0] = kept
            self._tail_size = _size(kept)


async def within_budget(
    stream: AsyncIterator[Message], limits: Limits, reply_to: str
) -> AsyncGenerator[Message, None]:
    """``stream`` with its console output held to ``limits.output_bytes``.

    The withheld or cut part comes just before the final ``active_line`` null.
    Closing this generator closes ``stream`` (which stops the code).
    """
    budget = OutputBudget(limits.output_bytes, limits.spill_dir, reply_to)
    try:
        async for message in stream:
            if message.type == "console" and message.format == "output":
                text = budget.feed(message.content)
                if not text:
                    continue
                if text is not message.content:
                    message = message.model_copy(update={"content": text})
            elif message.type == "console" and message.content is None:
                cut = budget.finish()
                if cut is not None and cut.path is None:
                    yield replies.output(cut.text, reply_to)
                elif cut is not None:
                    yield replies.output(
                        cut.text,
                        reply_to,
                        status="truncated",
                        omitted_bytes=cut.omitted,
                        total_bytes=cut.total,
                        output_path=str(cut.path),
                    )
            yield message
    finally:
        budget.finish()
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()
