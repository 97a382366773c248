"""Reading inputs when stdin is not a terminal (``lmc repl --jsonl < script``).

Lines are grouped into inputs by the same completeness rule as Enter at the
prompt; the end of the stream ends the last input and then the REPL.
"""

from __future__ import annotations

from typing import IO, Protocol

import anyio

from .completeness import is_complete

__all__ = ["LineReader", "Reader"]


class Reader(Protocol):
    """Where the REPL's inputs come from."""

    language: str

    async def read(self) -> str:
        """The next input; ``EOFError`` when there is none, ``KeyboardInterrupt`` on Ctrl-C."""
        ...

    async def ask(self, question: str) -> str:
        """An answer for the running code's ``input(question)``."""
        ...


class LineReader:
    """Inputs from a stream of lines, grouped by :func:`.completeness.is_complete`."""

    def __init__(self, stream: IO[str]) -> None:
        self.language = "python"
        self._stream = stream

    async def _line(self) -> str:
        line: str = await anyio.to_thread.run_sync(self._stream.readline, abandon_on_cancel=True)
        return line

    async def read(self) -> str:
        lines: list[str] = []
        while True:
            line = await self._line()
            if not line:
                if lines:
                    return "\n".join(lines)
                raise EOFError
            lines.append(line.rstrip("\n"))
            text = "\n".join(lines)
            if is_complete(self.language, text):
                return text

    async def ask(self, question: str) -> str:
        line = await self._line()
        if not line:
            raise EOFError
        return line.rstrip("\n")
