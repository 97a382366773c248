"""The output budget: head and tail within a byte limit, the whole output on disk.

Up to half the budget streams out as it comes (the head). Past it, nothing more
is sent while the code runs; every byte goes to a file, and only the last
half-budget is kept in memory (the tail). When the execution ends the tail is
sent after an "N bytes omitted" marker that gives the file's path. Memory stays
flat however much the code prints.
"""

from __future__ import annotations

import os
import tempfile
from collections import deque
from pathlib import Path
from typing import IO

__all__ = ["OutputBudget", "Truncation"]


def _size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class Truncation:
    """What :meth:`OutputBudget.finish` reports once the budget was exceeded."""

    def __init__(self, text: str, omitted: int, total: int, path: Path) -> None:
        self.text = text
        self.omitted = omitted
        self.total = total
        self.path = path


class OutputBudget:
    """Keeps one execution's console output within ``limit`` bytes."""

    def __init__(self, limit: int, spill_dir: Path | None, name: str) -> None:
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
        size = _size(text)
        self._total += size
        if self._file is None:
            if self._head_size + size <= self._head_limit:
                self._head_size += size
                self._head.append(text)
                return text
            self._open()
            room = self._head_limit - self._head_size
            sent = text[:room]
            while _size(sent) > room:
                sent = sent[: len(sent) - (_size(sent) - room)]
            self._head_size += _size(sent)
            assert self._file is not None
            self._file.write(text)
            self._keep(text[len(sent) :])
            return sent
        self._file.write(text)
        self._keep(text)
        return ""

    def finish(self) -> Truncation | None:
        """Close the file; the tail and its marker if the budget was exceeded."""
        if self._file is None or self.path is None:
            return None
        self._file.close()
        tail = "".join(self._tail)
        while _size(tail) > self._tail_limit:
            tail = tail[_size(tail) - self._tail_limit :]
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
        for chunk in self._head:
            self._file.write(chunk)
        self._head.clear()

    def _keep(self, text: str) -> None:
        if not text:
            return
        self._tail.append(text)
        self._tail_size += _size(text)
        while len(self._tail) > 1 and self._tail_size - _size(self._tail[0]) >= self._tail_limit:
            self._tail_size -= _size(self._tail.popleft())
        if len(self._tail) == 1 and self._tail_size > 2 * self._tail_limit:
            kept = self._tail[0][-self._tail_limit :]
            self._tail[0] = kept
            self._tail_size = _size(kept)
