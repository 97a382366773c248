"""The prompt marker: how a shell says, in its output stream, that a command is done.

Each shell's prompt is set to ``ESC ] lmc ; TOKEN ; STATUS BEL`` (an OSC
sequence no terminal program prints by chance; ``TOKEN`` is random per
session). The shell prints its prompt exactly when it is ready for the next
command, also after an interrupt, so the marker ends every execution, in order
with everything the code printed before it. :class:`MarkerParser` splits the
PTY's byte stream into output and markers, holding back only a trailing piece
that could be the start of a marker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Done", "MarkerParser", "marker_prefix"]

_MAX_STATUS_DIGITS = 4


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
