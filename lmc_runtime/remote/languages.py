"""The server's ``GET /v1/languages`` as ``Computer.languages`` reports languages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..language_status import LanguageStatus

__all__ = ["language_statuses", "resolve"]


def resolve(known: Iterable[dict[str, Any]], language: str) -> str | None:
    """The name of the language whose name or alias is ``language`` (in any case), or None."""
    wanted = language.lower()
    for entry in known:
        name = str(entry.get("name"))
        if wanted == name.lower() or wanted in (str(a).lower() for a in entry.get("aliases") or ()):
            return name
    return None


def language_statuses(
    known: Iterable[dict[str, Any]], session: Sequence[str] | None
) -> dict[str, LanguageStatus]:
    """Every language of ``known``; one outside the ``session``'s languages is
    unavailable, and says so."""
    chosen = set(session or ())
    result = {}
    for entry in known:
        name = str(entry.get("name"))
        aliases = tuple(str(a) for a in entry.get("aliases") or ())
        available = bool(entry.get("available"))
        reason = entry.get("reason")
        if available and session is not None and name not in chosen:
            available = False
            reason = f"this session runs {', '.join(sorted(chosen))} only"
        result[name] = LanguageStatus(name, available, reason, aliases)
    return result
