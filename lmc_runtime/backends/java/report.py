"""jshell's errors and exceptions, told with the lines of the user's cell.

A compile error (``Error:``, its message, the source line, a caret line) is told
as ``Error at line N:`` with the line as the user wrote it. An exception's frames
name snippets (``at f (#3:2)``): those of this run become ``(line N)``, those of
an earlier run ``(line N of an earlier run)``.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from .cells import Chunk

__all__ = ["Report", "Snippets"]

_CARET = re.compile(r"^\s*\^(?:-*\^)?\s*$")
_FRAME = re.compile(r"\(#(\d+):(\d+)\)")
#: Snippets whose first line is remembered, for the frames of later runs.
_KEPT = 10_000


class Snippets(OrderedDict[int, tuple[object, int]]):
    """Where each snippet begins: its run and the line of that run's cell (the last few)."""

    def record(self, ids: range, run: object, line: int) -> None:
        for snippet in ids:
            self[snippet] = (run, line)
        while len(self) > _KEPT:
            self.popitem(last=False)


class Report:
    """Turns what jshell said about one chunk into lines for the user."""

    def __init__(self, chunk: Chunk, first_id: int, run: object, snippets: Snippets) -> None:
        self._chunk, self._first_id, self._run, self._snippets = chunk, first_id, run, snippets
        self._error: list[str] = []

    def said(self, text: str) -> list[str]:
        """The lines to show for one line jshell said (none while an error is incomplete)."""
        if text == "Error:" or self._error:
            self._error.append(text)
            return self._error_lines() if _CARET.match(text) else []
        return [_FRAME.sub(self._frame, text)]

    def flush(self) -> list[str]:
        """An error that never got its caret line, as it is."""
        lines, self._error = self._error, []
        return [f"Error at line {self._chunk.first}:", *lines[1:]] if lines else []

    def _error_lines(self) -> list[str]:
        *head, shown, caret = self._error
        self._error = []
        chunk = self._chunk
        line = chunk.first
        for index, typed in enumerate(chunk.typed):
            if typed == shown:
                shown, line = chunk.source[index], chunk.first + index
                if index > 0 and typed.startswith("*/"):
                    caret = caret[2:] if caret.startswith("  ") else caret.lstrip()
                break
            if shown.strip() and shown.strip() in typed:
                line = chunk.first + index
                break
        return [f"Error at line {line}:", *head[1:], shown, caret]

    def _frame(self, match: re.Match[str]) -> str:
        snippet, offset = int(match.group(1)), int(match.group(2)) - 1
        if snippet >= self._first_id:
            return f"(line {self._chunk.first + offset})"
        if snippet not in self._snippets:
            return match.group()
        run, line = self._snippets[snippet]
        later = "" if run == self._run else " of an earlier run"
        return f"(line {line + offset}{later})"
