"""What travels from an interpreter to its run: the items of a :class:`~.route.Route`.

A backend's event source turns what its interpreter says into these items;
one base execution turns them into computer messages. ``Gone`` is the one
record of why an interpreter is not there any more, for every backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...replies import Status

__all__ = ["Finished", "Gone", "Line", "Output"]


@dataclass(frozen=True)
class Output:
    """Text the code wrote; ``stream`` is ``"stdout"`` or ``"stderr"``."""

    text: str
    stream: str = "stdout"


@dataclass(frozen=True)
class Line:
    """The 1-based line of the code now running."""

    line: int


@dataclass(frozen=True)
class Finished:
    """The interpreter is done with the run.

    ``status`` is how the code ended (ok, error...) when nobody stopped it;
    ``extras`` go into the final message; ``note`` ends the notice of a run that
    was stopped (a sentence, with a leading space: what the code left running).
    """

    status: Status = Status.OK
    extras: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Gone:
    """Why an interpreter is gone while a run was open (or since the last run).

    ``intentional`` when the runtime ended it (a restart, a close), with the
    ``status`` the run ends with; ``by_code`` when the code itself ended it
    (``exit()``, ``process.exit()``); else it died. ``detail`` is what the
    interpreter last wrote on its way out (a log's tail), if anything.
    """

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
