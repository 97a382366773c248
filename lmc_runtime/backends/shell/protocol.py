"""What a shell tells the runtime: the done marker in its output, and line records.

The prompt is ``ESC ] lmc ; TOKEN ; STATUS BEL`` (``TOKEN`` random per session),
printed exactly when the shell is ready again, so it ends every run in order
with its output. The DEBUG trap writes ``"RUN LINE\\n"`` to a pipe of its own;
``RUN`` tells this run's records from those of an earlier run's subshell. Each
run line first writes ``"RUN 0\\n"``: the shell took that run.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from ..core.lines import Lines

__all__ = ["Done", "MarkerParser", "RecordParser", "marker_prefix"]

logger = logging.getLogger(__name__)

_MAX_STATUS_DIGITS = 4
#: A record is "RUN LINE": a line past this many bytes is not one.
_RECORD_LIMIT = 4096


def marker_prefix(token: str) -> bytes:
    """The bytes every marker of session ``token`` starts with."""
    return b"\x1b]lmc;" + token.encode("ascii") + b";"


@dataclass(frozen=True)
class Done:
    """A marker: the shell is ready again; ``status`` is ``$?`` of the last command."""

    status: int


class MarkerParser:
    """Splits PTY bytes into output (``bytes``) and :class:`Done` items, in order."""

    def __init__(self, token: str) -> None:
        self._prefix = marker_prefix(token)
        self._pattern = re.compile(
            re.escape(self._prefix) + rb"(\d{0,%d})\x07" % _MAX_STATUS_DIGITS
        )
        self._held = b""

    def feed(self, data: bytes) -> list[bytes | Done]:
        """Parse ``data``; returns output pieces and markers in stream order."""
        buf = self._held + data
        self._held = b""
        items: list[bytes | Done] = []
        pos = 0
        while True:
            start = buf.find(self._prefix, pos)
            if start < 0:
                break
            match = self._pattern.match(buf, start)
            if match is None:
                rest = buf[start + len(self._prefix) :]
                if len(rest) <= _MAX_STATUS_DIGITS and (rest == b"" or rest.isdigit()):
                    # An incomplete marker at the end: wait for the rest.
                    if start > pos:
                        items.append(buf[pos:start])
                    self._held = buf[start:]
                    return items
                # Not a marker after all (user output that looks like one): keep it.
                items.append(buf[pos : start + len(self._prefix)])
                pos = start + len(self._prefix)
                continue
            if start > pos:
                items.append(buf[pos:start])
            items.append(Done(int(match.group(1) or b"0")))
            pos = match.end()
        tail = buf[pos:]
        keep = self._partial_prefix_length(tail)
        if keep:
            self._held = tail[-keep:]
            tail = tail[:-keep]
        if tail:
            items.append(tail)
        return items

    def flush(self) -> bytes:
        """Whatever is held back (the stream ended): it was output after all."""
        held, self._held = self._held, b""
        return held

    def _partial_prefix_length(self, tail: bytes) -> int:
        """How many bytes at the end of ``tail`` are a proper prefix of the marker."""
        esc = tail.rfind(b"\x1b", max(0, len(tail) - len(self._prefix)))
        while esc >= 0:
            piece = tail[esc:]
            if self._prefix.startswith(piece):
                return len(piece)
            esc = tail.rfind(b"\x1b", max(0, len(tail) - len(self._prefix)), esc)
        return 0


class RecordParser:
    """Line records in, the newest line of each run in the records complete so far out.

    A record is a few bytes; the code can write to the pipe too, but what is held of
    an unfinished line stays bounded (:class:`~..core.lines.Lines`) and a line too long
    to be a record is dropped, with one warning per session.
    """

    def __init__(self, limit: int = _RECORD_LIMIT) -> None:
        self._lines = Lines(limit)
        self._limit = limit
        self._warned = False

    @property
    def held(self) -> int:
        """How many bytes of an unfinished line are held now (at most the limit)."""
        return self._lines.held

    def feed(self, data: bytes) -> dict[int, int]:
        """The last line of each run in the records ``data`` completes (0: the run's
        begun record alone).

        Only the newest line of a run matters: a burst read at once happened at once.
        """
        latest: dict[int, int] = {}
        for piece in self._lines.feed(data):
            if not (piece.first and piece.last):
                if piece.first:
                    level = logging.DEBUG if self._warned else logging.WARNING
                    logger.log(level, "dropped a line longer than a record (%d bytes)", self._limit)
                    self._warned = True
                continue
            fields = piece.data.split()
            if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
                run, line = int(fields[0]), int(fields[1])
                latest[run] = max(line, latest.get(run, 0)) if line == 0 else line
        return latest
