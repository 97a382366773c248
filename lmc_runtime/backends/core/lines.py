"""Lines out of a byte stream that a program's code can write to as well (a runner's
events FIFO, a shell's line records): what is held of an unfinished line is bounded,
and nothing read before is joined again, whatever is written.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Lines", "Piece"]


class Piece(NamedTuple):
    """What :class:`Lines` gives: a whole line (``first`` and ``last``), or a piece of
    one too long to hold (the newline is never part of it)."""

    data: bytes
    first: bool
    last: bool


class Lines:
    """Lines out of a byte stream, holding at most ``limit`` bytes of an unfinished one.

    A line still unfinished past ``limit`` bytes comes out in pieces as it is read
    (the first, the next ones, the last when its newline comes), so what is held
    stays bounded whatever is written, and each byte is copied a bounded number of
    times (nothing read before is joined again).
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._held = bytearray()
        self._long = False

    @property
    def held(self) -> int:
        """How many bytes of an unfinished line are held now."""
        return len(self._held)

    def feed(self, data: bytes) -> list[Piece]:
        """The lines and pieces that ``data`` completes, in order."""
        *complete, rest = data.split(b"\n")
        pieces: list[Piece] = []
        for index, part in enumerate(complete):
            if index == 0 and self._long:
                pieces.append(Piece(part, False, True))
                self._long = False
            elif index == 0 and self._held:
                self._held += part
                pieces.append(Piece(bytes(self._held), True, True))
                self._held.clear()
            else:
                pieces.append(Piece(part, True, True))
        if self._long:
            if rest:
                pieces.append(Piece(rest, False, False))
        elif len(self._held) + len(rest) > self._limit:
            pieces.append(Piece(bytes(self._held) + rest, True, False))
            self._held.clear()
            self._long = True
        else:
            self._held += rest
        return pieces
