"""The output budget: head and tail within a byte limit, the whole output on disk.

Everything an execution sends back is charged: each message's content in UTF-8
bytes plus ``overhead``, a fixed cost per message, so that a flood of tiny
messages is charged too. The first half of the budget streams out as it comes
(the head). Past it, output is withheld. If the execution ends within the
budget, the withheld part is sent whole. If it goes past the budget, every byte
goes to a file, only what the rest of the budget can carry stays in memory (the
tail), and at the end the tail is sent after an "N bytes omitted" marker that
gives the file's path. Memory stays flat however much the code prints.
Displays, which cannot be cut, take their share with :meth:`OutputBudget.take`.

The file is capped (``spill_limit``, in bytes: a sandbox passes the room left
on the session's disk). A file that cannot be created or written (``ENOSPC``)
is never an error: the output goes out as usual and the marker says how much
was saved, if anything.

:mod:`lmc_runtime.budget.filter` applies it to an execution's stream of messages.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .tail import Part, Tail, head_at_line, line_slack, prefix, size

__all__ = ["OutputBudget", "Part", "Truncation"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Truncation:
    """What :meth:`OutputBudget.finish` hands back: withheld text, maybe cut.

    ``parts`` keep each piece's extras (stderr, error names); ``text`` joins them.
    ``cut`` says the output went past the budget (``parts[0]`` is then the
    marker); ``path`` is its file, None when nothing could be saved, and
    ``where`` how the marker names it (its path, or its address for a client).
    """

    text: str
    omitted: int
    total: int
    path: Path | None
    parts: tuple[Part, ...] = ()
    cut: bool = False
    where: str | None = None


class OutputBudget:
    """Keeps one execution's output within ``limit`` bytes, ``overhead`` a message."""

    def __init__(
        self,
        limit: int,
        spill_dir: Path | None,
        name: str,
        spill_limit: int | None = None,
        *,
        overhead: int = 0,
        route: str | None = None,
    ) -> None:
        """``route``: the address the file is fetched at, its name appended (None:
        the marker names the file's own path)."""
        self._limit = limit
        self._route = route
        self._overhead = overhead
        self._spill_limit = spill_limit
        self._spilled = 0  # bytes written to the file
        self._over = False  # past the budget: everything goes to the file
        self._unsaved: str | None = None  # why the file stopped short, if it did
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._spill_dir = spill_dir
        # A label only (a client's message id can hold '/' or '..'): the file's
        # name keeps letters, digits, '-' and '_', so it stays in its folder.
        self._name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"
        self._sent: list[str] = []  # kept until a spill writes them to the file
        self._sent_size = 0  # text sent, in bytes
        self._used = 0  # what everything sent has cost, overheads included
        self._line_ended = True  # the head sent so far ends a line (or is empty)
        self._tail = Tail(overhead)
        self._total = 0
        self._file: IO[str] | None = None
        self.path: Path | None = None

    @property
    def exceeded(self) -> bool:
        return self._over

    @property
    def used(self) -> int:
        """What the output sent so far has cost, in bytes."""
        return self._used

    @property
    def held(self) -> int:
        """The bytes of text withheld now (the tail)."""
        return self._tail.size

    def feed(self, text: str, extras: dict[str, Any] | None = None) -> str:
        """The part of ``text`` to send now ("" once past the head)."""
        self._total += size(text)
        sent = ""
        if not self._over and not self._tail:
            sent = prefix(text, self._head_limit - self._used - self._overhead)
            if len(sent) < len(text):  # the head ends here: between lines if one is near
                slack = line_slack(self._head_limit)
                sent = head_at_line(sent, slack, after_line=self._line_ended)
            if sent:
                self._line_ended = sent.endswith("\n")
                self._sent_size += size(sent)
                self._used += size(sent) + self._overhead
        rest = text[len(sent) :]
        if self._over:
            self._spill(text)
            self._keep(rest, extras)
            return sent
        if sent:
            self._sent.append(sent)
        self._keep(rest, extras)
        if self._used + self._tail.cost > self._limit:
            self._open()
        return sent

    def take(self, cost: int) -> bool:
        """Whether a message that cannot be cut (a display), ``cost`` bytes before
        its overhead, fits in what is left once the withheld output is sent; if
        it does, it is charged (send :meth:`flush`'s parts before it)."""
        cost += self._overhead
        if self._over or self._used + self._tail.cost + cost > self._limit:
            return False
        self._used += cost
        return True

    def flush(self) -> list[Part]:
        """Withheld output to send now, before a display, while it is still whole;
        each run of one stream as one part."""
        if self._over or not self._tail:
            return []
        self._used += self._tail.cost
        self._sent_size += self._tail.size
        parts = self._tail.take()
        self._sent.extend(text for text, _ in parts)
        return parts

    def finish(self) -> Truncation | None:
        """Close the file; the withheld text (with its marker if cut), or None."""
        if not self._over:
            parts = self.flush()
            if not parts:
                return None
            return Truncation("".join(t for t, _ in parts), 0, self._total, None, tuple(parts))
        self._close()
        self._tail.cut(self._tail_limit)
        omitted = self._total - self._sent_size - self._tail.size
        tail = self._tail.take()
        marker = f"\n[... {omitted} bytes omitted; {self._saved()} ...]\n"
        text = marker + "".join(t for t, _ in tail)
        pieces = ((marker, None), *tail)
        return Truncation(text, omitted, self._total, self.path, pieces, cut=True, where=self.where)

    @property
    def where(self) -> str | None:
        """How the file is named to the client: its address under ``route``, else its path."""
        if self.path is None:
            return None
        return self._route + self.path.name if self._route is not None else str(self.path)

    def _saved(self) -> str:
        """What the marker says about the file."""
        if self.path is None:
            return f"it could not be saved ({self._unsaved or 'no room for it'})"
        if self._unsaved is not None:
            return (
                f"its first {self._spilled} bytes are saved in {self.where}; "
                f"saving the rest failed ({self._unsaved})"
            )
        if self._spill_limit is not None and self._spilled >= self._spill_limit:
            return f"its first {self._spill_limit} bytes are saved in {self.where}"
        return f"the whole output ({self._total} bytes) is saved in {self.where}"

    def _open(self) -> None:
        self._over = True
        if self._spill_limit is not None and self._spill_limit <= 0:
            self._unsaved = "no room is left for it on the disk"
        else:
            directory = self._spill_dir or Path(tempfile.gettempdir()) / "lmc-runtime-output"
            try:
                directory.mkdir(parents=True, exist_ok=True)
                fd, name = tempfile.mkstemp(prefix=f"{self._name}-", suffix=".txt", dir=directory)
            except OSError as exc:
                logger.info("the whole output could not be saved: %s", exc)
                self._unsaved = exc.strerror or str(exc)
            else:
                self.path = Path(name)
                self._file = os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass")
        for chunk in self._sent:
            self._spill(chunk)
        for text in self._tail.texts():
            self._spill(text)
        self._sent.clear()
        self._tail_limit = max(0, self._limit - self._used)
        self._tail.trim(self._tail_limit)

    def _spill(self, text: str) -> None:
        """Write ``text`` to the file, up to the cap in UTF-8 bytes; a failed write
        (a full disk) closes the file and keeps what it holds."""
        if self._file is None:
            return
        if self._spill_limit is not None:
            room = self._spill_limit - self._spilled
            if room <= 0:
                return
            text = prefix(text, room)
        try:
            self._file.write(text)
        except OSError as exc:
            self._failed(exc)
            return
        self._spilled += size(text)

    def _close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self._failed(exc)
            self._file = None

    def _failed(self, exc: OSError) -> None:
        """Stop saving after a write error; the file keeps what reached the disk."""
        logger.info("saving the whole output to %s stopped: %s", self.path, exc)
        self._unsaved = exc.strerror or str(exc)
        file, self._file = self._file, None
        if file is not None:
            # A buffer that cannot be flushed either is dropped; the descriptor is
            # closed all the same.
            with contextlib.suppress(OSError):
                file.close()
        if self.path is not None:
            with contextlib.suppress(OSError):
                self._spilled = self.path.stat().st_size

    def _keep(self, text: str, extras: dict[str, Any] | None) -> None:
        self._tail.add(text, extras)
        if self._over:
            self._tail.trim(self._tail_limit)
