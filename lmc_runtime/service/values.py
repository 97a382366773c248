"""How the values of ``lmc serve``'s settings are read: sizes with units, numbers,
switches, lists; each parser raises :class:`ValueError` saying what it wanted.

A value comes as text (a flag, an environment variable) or as a TOML value
(a number, a boolean, a string or a list); both are accepted wherever they make
sense. ``none``, ``off`` or ``unlimited`` turn off a limit that may be off.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "Parser",
    "at_least",
    "boolean",
    "choice",
    "format_size",
    "integer",
    "number",
    "origins",
    "path",
    "size",
    "text",
    "unlimited",
]

#: A parser: a raw value (text, or what TOML gave) to the setting's value.
Parser = Callable[[object], object]

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", re.IGNORECASE)
_OFF = {"none", "off", "unlimited"}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def size(raw: object) -> int:
    """Bytes: a whole number, or a number with a binary unit (``512M``, ``2G``, ``1.5GiB``)."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    match = _SIZE.fullmatch(raw) if isinstance(raw, str) else None
    if match is None:
        raise ValueError(f"{raw!r} is not a size (bytes, or with a unit: 512K, 512M, 2G)")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def format_size(value: int) -> str:
    """``value`` bytes in the largest unit that divides it (``1G``, ``512M``)."""
    for unit in ("T", "G", "M", "K"):
        if value and value % _UNITS[unit] == 0:
            return f"{value // _UNITS[unit]}{unit}"
    return str(value)


def number(raw: object) -> float:
    """A number (seconds, a share of a CPU)."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, str):
        try:
            return float(raw)
        except ValueError:
            pass
    raise ValueError(f"{raw!r} is not a number")


def integer(raw: object) -> int:
    """A whole number."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lstrip("+-").isdigit():
        return int(raw)
    raise ValueError(f"{raw!r} is not a whole number")


def boolean(raw: object) -> bool:
    """A switch: true/false, yes/no, on/off, 1/0."""
    if isinstance(raw, bool):
        return raw
    word = raw.strip().lower() if isinstance(raw, str) else None
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"{raw!r} is not a switch (true or false)")


def text(raw: object) -> str:
    """A non-empty string."""
    if isinstance(raw, str) and raw.strip():
        return raw.strip()
    raise ValueError(f"{raw!r} is not a non-empty string")


def path(raw: object) -> Path:
    """A file system path (``~`` expanded)."""
    return Path(text(raw)).expanduser()


def origins(raw: object) -> tuple[str, ...]:
    """Origins: a comma-separated string, or a TOML list of strings."""
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise ValueError(f"{raw!r} is not a list of origins")
    return tuple(item.strip() for item in items if item.strip())


def choice(*allowed: str) -> Parser:
    """One of ``allowed`` (any case)."""

    def parse(raw: object) -> str:
        word = raw.strip().lower() if isinstance(raw, str) else None
        if word not in allowed:
            raise ValueError(f"{raw!r} is not one of {', '.join(allowed)}")
        return word

    return parse


def unlimited(parse: Parser, minimum: float) -> Parser:
    """``parse``, at least ``minimum``, or None for ``none``/``off``/``unlimited``."""

    def parse_limit(raw: object) -> object:
        if isinstance(raw, str) and raw.strip().lower() in _OFF:
            return None
        return at_least(parse, minimum)(raw)

    return parse_limit


def at_least(parse: Parser, minimum: float) -> Parser:
    """``parse``, refusing values below ``minimum``."""

    def parse_bounded(raw: object) -> object:
        value = parse(raw)
        assert isinstance(value, int | float)
        if value < minimum:
            shown = format_size(int(minimum)) if parse is size else f"{minimum:g}"
            raise ValueError(f"{raw!r} is below the least allowed, {shown}")
        return value

    return parse_bounded
