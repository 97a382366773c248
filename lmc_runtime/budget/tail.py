"""The withheld part of an execution's console output, kept as runs of one stream.

:class:`Tail` holds what :class:`~lmc_runtime.budget.output.OutputBudget` withholds.
Consecutive pieces with the same extras (the same stream, the same error) form
one run, which goes out as one message; so each run costs its text's UTF-8
bytes plus a fixed ``overhead``, and ``cost`` is what sending the whole tail
takes from the budget. Pieces are kept as they came and joined only when the
tail is sent, so appending is cheap however many tiny pieces arrive.
"""

from __future__ import annotations

from collections import deque
from typing import Any

__all__ = ["Part", "Tail", "head_at_line", "line_slack", "prefix", "size", "suffix", "tail_at_line"]

#: The most a cut gives up to fall between lines: 1 KiB, or 10% of what is kept.
LINE_SLACK_BYTES = 1024

#: A piece of console output and the extras of the message it came in.
Part = tuple[str, dict[str, Any] | None]


def size(text: str) -> int:
    """``text``'s length in UTF-8 bytes."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` that fits in ``limit`` UTF-8 bytes."""
    if limit <= 0:
        return ""
    if text.isascii():
        return text[:limit]
    return text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


def suffix(text: str, limit: int) -> str:
    """The longest suffix of ``text`` that fits in ``limit`` UTF-8 bytes."""
    if limit <= 0:
        return ""
    if text.isascii():
        return text[-limit:]
    return text.encode("utf-8", "surrogatepass")[-limit:].decode("utf-8", "ignore")


def line_slack(kept: int) -> int:
    """How many bytes a cut keeping ``kept`` bytes may give up to fall between lines."""
    return min(LINE_SLACK_BYTES, kept // 10)


def head_at_line(text: str, slack: int, *, after_line: bool) -> str:
    """``text`` (a cut piece's head) back to just after its last line end, if that
    gives up at most ``slack`` bytes; else ``text`` as it is. ``after_line``: what
    was sent before it ends a line (so all of a short ``text`` may go)."""
    end = text.rfind("\n", max(0, len(text) - slack - 1))
    if end == len(text) - 1:
        return text
    if end < 0 and not after_line:
        return text
    return text[: end + 1] if size(text[end + 1 :]) <= slack else text


def tail_at_line(text: str, slack: int) -> str:
    """``text`` (a cut piece's tail) from just after its first line end, if that
    gives up at most ``slack`` bytes; else ``text`` as it is."""
    end = text.find("\n", 0, slack)
    return text[end + 1 :] if end >= 0 and size(text[: end + 1]) <= slack else text


class _Run:
    """Consecutive pieces with the same extras: one message when sent."""

    __slots__ = ("extras", "pieces")

    def __init__(self, text: str, extras: dict[str, Any] | None) -> None:
        self.pieces: deque[str] = deque((text,))
        self.extras = extras


class Tail:
    """Withheld output, in order, as runs; ``size`` counts text, ``cost`` adds
    ``overhead`` for each run."""

    def __init__(self, overhead: int = 0) -> None:
        self.overhead = overhead
        self._runs: deque[_Run] = deque()
        self.size = 0

    def __bool__(self) -> bool:
        return bool(self._runs)

    @property
    def cost(self) -> int:
        return self.size + self.overhead * len(self._runs)

    def texts(self) -> list[str]:
        """Every piece, in order (for the spill file)."""
        return [piece for run in self._runs for piece in run.pieces]

    def add(self, text: str, extras: dict[str, Any] | None) -> None:
        """Append ``text``: to the last run if it has the same extras."""
        if not text:
            return
        last = self._runs[-1] if self._runs else None
        if last is not None and last.extras == extras:
            last.pieces.append(text)
        else:
            self._runs.append(_Run(text, extras))
        self.size += size(text)

    def take(self) -> list[Part]:
        """Every run as one part, emptying the tail."""
        parts: list[Part] = [("".join(run.pieces), run.extras) for run in self._runs]
        self._runs.clear()
        self.size = 0
        return parts

    def trim(self, limit: int) -> None:
        """Drop whole pieces from the front while the rest still costs ``limit``
        or more; cut the front piece as well if the tail is then far over, so
        memory stays within about twice ``limit``. Cheap for many small pieces."""
        while self._runs and self.cost - self._front_cost() >= limit:
            self._pop_front()
        if self.cost > 2 * limit + self.overhead:
            self.cut(limit)

    def cut(self, limit: int) -> None:
        """Cut from the front until the tail costs at most ``limit``; if that leaves
        it starting mid-line, up to :func:`line_slack` more bytes go so that it
        starts at a line."""
        at_line = True
        while self._runs and self.cost > limit:
            piece = self._runs[0].pieces[0]
            excess = self.cost - limit
            if self._front_cost() <= excess:
                at_line = piece.endswith("\n")
                self._pop_front()
                continue
            kept = suffix(piece, size(piece) - excess)
            at_line = piece[: len(piece) - len(kept)].endswith("\n")
            self._replace_front(kept)
        if not at_line and self._runs:
            self._replace_front(tail_at_line(self._runs[0].pieces[0], line_slack(limit)))

    def _replace_front(self, kept: str) -> None:
        """Put ``kept`` (a suffix of the front piece) in its place."""
        run = self._runs[0]
        self.size -= size(run.pieces[0]) - size(kept)
        if kept:
            run.pieces[0] = kept
        else:
            run.pieces.popleft()
            if not run.pieces:
                self._runs.popleft()

    def _front_cost(self) -> int:
        """What dropping the front piece saves (its run's overhead if it is alone)."""
        run = self._runs[0]
        return size(run.pieces[0]) + (self.overhead if len(run.pieces) == 1 else 0)

    def _pop_front(self) -> None:
        run = self._runs[0]
        self.size -= size(run.pieces.popleft())
        if not run.pieces:
            self._runs.popleft()
