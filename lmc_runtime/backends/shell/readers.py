"""What a shell writes, as deliveries to its supervisor: its terminal (the code's
output, and the marker that ends each run) and the line-record pipe of its DEBUG trap
(which run began, and the line it runs).

:class:`~.interpreter.ShellInterpreter` starts both readers once the shell is spawned
and waits for them to drain after it ended.
"""

from __future__ import annotations

import codecs
import logging

import anyio

from ...procs import read_available
from ...replies import Status
from ..core import Begun, Deliver, Finished, Line, Output
from .protocol import Done, MarkerParser, RecordParser

__all__ = ["ShellReaders"]

logger = logging.getLogger(__name__)

#: What the shell printed before it was ready, kept for a start failure's message.
_EARLY_LIMIT = 2048


class ShellReaders:
    """The two readers of one shell, keyed by its done marker's ``token``."""

    def __init__(self, token: str) -> None:
        self._parser = MarkerParser(token)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        #: Set at the shell's first marker: it is at its prompt.
        self.ready = anyio.Event()
        #: Set once each reader has left (its descriptor ended or closed).
        self.pty_closed, self.records_closed = anyio.Event(), anyio.Event()
        #: The run going on: a done marker ends it.
        self.run = 0
        self._early = b""

    def early(self) -> str:
        """What the shell printed before it was ready (the end of it)."""
        return self._early.decode("utf-8", "replace").strip()

    async def read_pty(self, fd: int, deliver: Deliver) -> None:
        """Read the terminal ``fd`` until no process holds it."""
        try:
            data: bytes | None = b""
            while data is not None:
                await anyio.wait_readable(fd)
                data = read_available(fd)  # None: EIO, no process holds the terminal
                for item in self._parser.feed(data or b""):
                    await self._on_pty(item, deliver)
            await self._on_pty(self._parser.flush(), deliver, final=True)
        except (OSError, anyio.ClosedResourceError):
            logger.debug("the shell's terminal closed", exc_info=True)
        finally:
            self.pty_closed.set()

    async def _on_pty(self, item: bytes | Done, deliver: Deliver, *, final: bool = False) -> None:
        """Output goes to the open run (or is late); a marker ends the run (or the start)."""
        if not self.ready.is_set():
            if isinstance(item, Done):
                self.ready.set()
            else:
                self._early = (self._early + item)[-_EARLY_LIMIT:]
            return
        data = b"" if isinstance(item, Done) else item
        text = self._decoder.decode(data, final=final or isinstance(item, Done))
        if text:
            await deliver(Output(text), None)
        if isinstance(item, Done):
            status = Status.OK if item.status == 0 else Status.ERROR
            extras = {"exit_code": item.status, "execution_count": self.run, "state_lost": False}
            await deliver(Finished(status, extras), self.run)

    async def read_lines(self, fd: int, deliver: Deliver) -> None:
        """The DEBUG trap's records on the pipe ``fd``: each run's newest line, keyed by its run."""
        records = RecordParser()
        try:
            while True:
                await anyio.wait_readable(fd)  # a loop turn for others every read
                data = read_available(fd)
                if data is None:
                    return
                for run, line in records.feed(data).items():
                    await deliver(Begun(), run)
                    if line:
                        await deliver(Line(line), run)
        except (OSError, anyio.ClosedResourceError):
            logger.debug("the line-record pipe closed", exc_info=True)
        finally:
            self.records_closed.set()
