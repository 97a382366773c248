"""The stdin of a run: end-of-input, or a FIFO the caller's input callback answers.

Without a callback a cell reads ``/dev/null``: ``read x`` fails at once, and
nothing the runtime types into the shell's terminal can be read by user code.
With one, the cell's stdin is a FIFO the runtime holds open. A program that
wants input says nothing, so when the code has gone quiet the runtime looks,
once, at the shell's session in ``/proc``: a process blocked reading this FIFO
(its stdin) is waiting for input, and the callback is asked for a line.
A :class:`ShellRoute` carries the FIFO's path to the shell, and the run's last
unfinished output line (the prompt) and its activity to whoever feeds it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import anyio

from ..core import Output, Route
from ..core.procs import session_members

__all__ = ["ShellRoute", "StdinSource"]

_PROMPT_LIMIT = 400

#: Kernel wait channels of a process blocked in read, select or poll.
_READING = ("pipe_read", "do_select", "do_sys_poll", "core_sys_select")


class ShellRoute(Route):
    """A run's route, with where its stdin comes from and what it printed last."""

    def __init__(self, key: object, tag: str) -> None:
        super().__init__(key, tag)
        #: What the run's ``<`` redirection names.
        self.stdin = os.devnull
        #: The unfinished last line of the run's output: the prompt of a read.
        self.tail = ""
        #: Set by each piece of output; whoever waits for quiet replaces it.
        self.activity = anyio.Event()

    def observe(self, item: Any) -> bool:
        if isinstance(item, Output):
            cut = item.text.rfind("\n")
            tail = item.text[cut + 1 :] if cut >= 0 else self.tail + item.text
            self.tail = tail[-_PROMPT_LIMIT:]
            self.activity.set()
        return super().observe(item)


class StdinSource:
    """Where one run's stdin comes from."""

    def __init__(self, work_dir: Path, run: object, interactive: bool) -> None:
        self._fd = -1
        self._fifo: Path | None = None
        if interactive:
            self._fifo = work_dir / f"stdin-{run}"
            with contextlib.suppress(FileNotFoundError):
                self._fifo.unlink()
            os.mkfifo(self._fifo, 0o600)
            # The interpreter may run as another user (the sandbox's); the folder,
            # which only the host writes and that user's group may enter, guards it.
            os.chmod(self._fifo, 0o666)
            # Read-write: opening never blocks, and readers never see end-of-input early.
            self._fd = os.open(self._fifo, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)

    @property
    def path(self) -> str:
        """What the cell's ``<`` redirection names."""
        return str(self._fifo) if self._fifo is not None else os.devnull

    @property
    def interactive(self) -> bool:
        return self._fifo is not None

    def reader_waiting(self, session: int) -> bool:
        """Whether a process of ``session`` is blocked reading this FIFO as its stdin."""
        if self._fifo is None:
            return False
        target = str(self._fifo)
        for pid in session_members(session):
            try:
                if os.readlink(f"/proc/{pid}/fd/0") != target:
                    continue
                with open(f"/proc/{pid}/wchan") as fh:
                    wchan = fh.read()
            except OSError:
                continue
            if any(name in wchan for name in _READING):
                return True
        return False

    def answer(self, line: str) -> None:
        """Give the waiting reader ``line`` and a newline."""
        if self._fd >= 0:
            os.write(self._fd, (line + "\n").encode("utf-8"))

    def close(self) -> None:
        """Close the FIFO: readers left behind get end-of-input."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._fifo is not None:
            with contextlib.suppress(OSError):
                self._fifo.unlink()
