"""What the REPL shows: the interface its three displays (rich, plain, JSON lines) share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..messages import Message

__all__ = ["RunDisplay", "View"]


class RunDisplay(Protocol):
    """The display of one execution, fed each computer message as it arrives."""

    def add(self, message: Message) -> None:
        """Show one computer message."""
        ...

    def note(self, text: str) -> None:
        """A remark from the REPL during the run (e.g. that it is interrupting)."""
        ...

    def suspend(self) -> None:
        """Make room for a prompt on the terminal (the code asked for input)."""
        ...

    def resume(self) -> None:
        """Continue after :meth:`suspend`."""
        ...

    def close(self) -> None:
        """The run is over: flush what is left."""
        ...


class View(Protocol):
    """The REPL's output side."""

    def begin(self, request: Mapping[str, Any], language: str, code: str) -> RunDisplay:
        """Start showing the run of ``request`` (``code`` in ``language``)."""
        ...

    def info(self, text: str) -> None:
        """A message from the REPL itself."""
        ...

    def error(self, text: str) -> None:
        """A problem the REPL reports (bad input, a file it could not write)."""
        ...
