"""What a computer says of each of its languages (``languages()`` of every
:class:`~lmc_runtime.computer_like.ComputerLike`, local or remote): whether it
can run, and if not, why. A value of the interface, free of any backend, so
that a remote client need not import the local execution machinery."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LanguageStatus"]


@dataclass(frozen=True)
class LanguageStatus:
    """One language as ``Computer.languages`` reports it."""

    name: str
    available: bool
    reason: str | None
    aliases: tuple[str, ...]
