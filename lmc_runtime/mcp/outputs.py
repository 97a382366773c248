"""Whole outputs a sandboxed workspace saved, read back by name.

When a run's output passes its budget, the part in the middle is cut and the
whole output is saved in the sandbox's output folder, which only the host
writes. The truncation note names it ``output://NAME`` (never a path of the
host), and the ``read_output`` tool reads it, a piece at a time.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import anyio

__all__ = ["OUTPUT_SCHEME", "OutputPiece", "SavedOutputs"]

#: How a truncation note names a saved output: this, then the output's name.
OUTPUT_SCHEME = "output://"

#: A saved output's name: plain characters only (see the output budget's spill files).
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,254}")


@dataclass(frozen=True)
class OutputPiece:
    """``data``, the bytes of output ``name`` from ``offset``; ``total``: its size."""

    name: str
    offset: int
    data: bytes
    total: int

    @property
    def end(self) -> int:
        return self.offset + len(self.data)

    def text(self) -> str:
        """The piece as text; a character cut at either end is left out."""
        data = self.data
        start = 0
        while start < min(3, len(data)) and data[start] & 0xC0 == 0x80:
            start += 1  # the tail of a character the previous piece began
        return data[start:].decode("utf-8", "ignore")


class SavedOutputs:
    """The saved outputs of one sandbox, in ``folder`` (a folder only the host writes)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @staticmethod
    def name_of(address: str) -> str:
        """The output's name in ``address`` (``output://NAME`` or ``NAME``);
        ``ValueError`` if it cannot be one."""
        name = address.strip().removeprefix(OUTPUT_SCHEME)
        if not _NAME.fullmatch(name):
            raise ValueError(f"{address!r} is not a saved output's name (as its note gives it)")
        return name

    def _read(self, name: str, offset: int, limit: int) -> OutputPiece:
        folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            try:
                fd = os.open(name, flags, dir_fd=folder)
            except FileNotFoundError:
                raise FileNotFoundError(f"there is no saved output {name}") from None
        finally:
            os.close(folder)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"{name} is not a saved output")
            data = os.pread(fd, limit, offset) if offset < info.st_size else b""
            return OutputPiece(name, offset, data, info.st_size)
        finally:
            os.close(fd)

    async def read(self, address: str, offset: int, limit: int) -> OutputPiece:
        """Up to ``limit`` bytes of the output ``address`` names, from ``offset``."""
        name = self.name_of(address)
        return await anyio.to_thread.run_sync(self._read, name, offset, limit)
