"""The session limits among ``lmc serve``'s options: each session's defaults, and
the most a session may ask for (:class:`~lmc_runtime.sandbox.SessionLimits`)."""

from __future__ import annotations

from ..sandbox import SessionLimits
from ..sandbox.policy import MINIMUMS
from .option import Option
from .values import Parser, at_least, format_size, integer, number, size, unlimited

__all__ = ["LIMIT_OPTIONS", "shown_size", "size_option"]

_LIMITS = SessionLimits()
_NOLIMIT = " ('none' for no limit)"


def shown_size(value: int | None) -> str:
    """A size as --help shows it: with its binary unit (``1G``, ``512M``), except a
    round decimal number, shown as written in bytes (``256000``, not ``250K``)."""
    if value is None:
        return "none"
    return str(value) if value % 1000 == 0 else format_size(value)


def size_option(name: str, least: int, default: int, help: str) -> Option:
    """A size of at least ``least`` bytes (``SIZE``: bytes, or with a binary unit),
    whose default ``--help`` shows as :func:`shown_size` does."""
    parse = at_least(size, least)
    return Option(name, parse, default, help, show=shown_size(default), metavar="SIZE")


def _limit(name: str, field: str, kind: Parser, metavar: str, help: str) -> Option:
    """A session limit (``field`` of :class:`SessionLimits`): a ``kind`` value of at
    least the sandbox's minimum, or 'none' for no limit; ``--help`` shows a size's
    default with its unit."""
    default = getattr(_LIMITS, field)
    shown = shown_size(int(default)) if kind is size and default is not None else None
    parse = unlimited(kind, MINIMUMS[field])
    return Option(name, parse, default, help + _NOLIMIT, show=shown, metavar=metavar)


LIMIT_OPTIONS: tuple[Option, ...] = (
    _limit("memory", "memory_bytes", size, "SIZE", "memory of a whole session"),
    _limit("cpu_seconds", "cpu_seconds", number, "SECONDS", "CPU seconds of one execution"),
    _limit("cpu_quota", "cpu_quota", number, "CPUS", "CPUs' worth a session may use at once"),
    _limit("disk", "disk_bytes", size, "SIZE", "disk space of a session"),
    _limit("file_size", "file_size_bytes", size, "SIZE", "largest file a session writes"),
    _limit("processes", "processes", integer, "N", "processes of a session"),
    _limit("wall_seconds", "wall_seconds", number, "SECONDS", "wall time of one execution"),
    size_option(
        "output_bytes",
        int(MINIMUMS["output_bytes"]),
        _LIMITS.output_bytes,
        "output one execution returns; the rest is cut",
    ),
)
