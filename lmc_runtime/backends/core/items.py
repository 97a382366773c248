"""What travels from an interpreter to its run: the items of a :class:`~.route.Route`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...replies import Status

__all__ = ["Begun", "Finished", "Gone", "Line", "Output"]


@dataclass(frozen=True)
class Output:
    """Text the code wrote; ``stream`` is ``"stdout"`` or ``"stderr"``; ``error`` names
    the class of the error that this text reports (a traceback), if it is one;
    ``value``: the text shows the value of the code's last expression (a runner's)."""

    text: str
    stream: str = "stdout"
    error: str | None = None
    value: bool = False


@dataclass(frozen=True)
class Line:
    """The 1-based line of the code now running."""

    line: int


@dataclass(frozen=True)
class Begun:
    """The interpreter has taken the run and is about to run its code: a death before
    this is not the code's, and the run is sent again to the next interpreter."""


@dataclass(frozen=True)
class Finished:
    """The interpreter is done with the run: ``status`` if nobody stopped it, ``extras``
    for the final message, ``note`` (a leading space) to end a stopped run's notice."""

    status: Status = Status.OK
    extras: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Gone:
    """Why an interpreter is gone: ``intentional`` (the runtime ended it; the run ends
    with ``status``), ``by_code`` (``exit()``), or it died; ``detail``: its last words."""

    description: str
    exit_code: int | None = None
    intentional: bool = False
    status: Status = Status.KERNEL_DIED
    by_code: bool = False
    detail: str = ""

    @classmethod
    def on_purpose(cls, description: str, status: Status = Status.RESTARTED) -> Gone:
        """The runtime ended the interpreter (``status``: restarted, timeout, closed...)."""
        return cls(description, intentional=True, status=status)

    @classmethod
    def exited(cls, description: str, exit_code: int | None) -> Gone:
        """The code ended its own interpreter."""
        return cls(description, exit_code, by_code=True, status=Status.RESTARTED)
