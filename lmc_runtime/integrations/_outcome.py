"""What the framework integrations read of a computer (any
:class:`~lmc_runtime.ComputerLike`): its languages described for a model, and
:class:`Outcome`, one run's messages and what the frameworks make of them."""

from __future__ import annotations

from dataclasses import dataclass

from ..computer_like import ComputerLike
from ..messages import Message

__all__ = ["NOT_RUN", "ComputerLike", "Outcome", "canonical", "describe_languages"]

#: The statuses of code that never reached an interpreter: its one reply's.
NOT_RUN = frozenset({"not_understood", "malformed", "unavailable"})

#: Exit codes for runs that end without one of their own (a shell's is kept).
_EXIT_CODES = {"ok": 0, "timeout": 124, "interrupted": 130}


@dataclass(frozen=True)
class Outcome:
    """Every message one run streamed, and what the frameworks read from them."""

    messages: tuple[Message, ...]

    @property
    def status(self) -> str:
        """The final message's ``extras.status`` (``ok``, ``error``, ``timeout``...);
        for code that never ran, its one reply's (``not_understood``...)."""
        last = self.messages[-1] if self.messages else None
        status = last.status if last is not None else None
        if last is not None and (last.is_final or status in NOT_RUN):
            return status or "aborted"
        return "aborted"

    @property
    def ran(self) -> bool:
        """Whether the code reached an interpreter."""
        return self.status not in NOT_RUN

    @property
    def ok(self) -> bool:
        """Whether the code ran to its end without an error."""
        return self.status == "ok"

    @property
    def exit_code(self) -> int:
        """The shell's exit code when it gave one; else 0 for ``ok``, 124 for a
        timeout, 130 for an interrupt and 1 for any other end."""
        final = self.messages[-1] if self.messages else None
        code = (final.extras or {}).get("exit_code") if final is not None else None
        if isinstance(code, int) and not isinstance(code, bool):
            return code
        return _EXIT_CODES.get(self.status, 1)

    @property
    def text(self) -> str:
        """All console output in order: stdout, stderr, results, tracebacks, notes."""
        return "".join(
            m.content
            for m in self.messages
            if m.type == "console" and m.format == "output" and isinstance(m.content, str)
        )

    @property
    def images(self) -> list[Message]:
        """The base64 images (plots, displays), in order."""
        return [
            m
            for m in self.messages
            if m.type == "image" and m.format != "path" and isinstance(m.content, str)
        ]


def describe_languages(computer: ComputerLike) -> str:
    """The languages that run on ``computer``, with their aliases, for a model to
    read: ``none`` if none does, and empty while they are unknown (a
    RemoteComputer learns its session's when it opens)."""
    if not computer.languages:
        return ""
    names = []
    for status in computer.languages.values():
        if status.available:
            aliases = f" ({', '.join(status.aliases)})" if status.aliases else ""
            names.append(status.name + aliases)
    return ", ".join(names) or "none"


def canonical(computer: ComputerLike, language: str) -> str:
    """The name of the language ``language`` names or is an alias of (in any
    case), or ``language`` itself if the computer knows no such language."""
    wanted = language.lower()
    for status in computer.languages.values():
        if wanted in (name.lower() for name in (status.name, *status.aliases)):
            return status.name
    return language
