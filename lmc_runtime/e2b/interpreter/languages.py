"""E2B's language names (``python``, ``js``, ``ts``, ``r``, ``java``, ``bash``...)
and lmc's, and the code that takes a context to a working directory."""

from __future__ import annotations

import json

from ...backends.registry import Registry

__all__ = ["chdir_code", "e2b_language", "java_properties", "lmc_language_of"]

#: E2B's short names, as its server normalizes them.
_ALIASES = {"js": "javascript", "ts": "typescript"}


def e2b_language(language: str | None) -> str:
    """``language`` as E2B's server names it (python when not given)."""
    if not language:
        return "python"
    name = language.strip().lower()
    return _ALIASES.get(name, name)


def lmc_language_of(language: str, registry: Registry) -> str | None:
    """lmc's name for E2B's ``language``, or None if lmc has no such language."""
    return registry.resolve(e2b_language(language)) if len(language) <= 64 else None


def java_properties(
    sandbox_envs: dict[str, str], envs: dict[str, str], last: frozenset[str]
) -> str:
    """What a Java run starts with, as on E2B, whose Java code reads its variables as
    system properties (``System.getProperty``): the sandbox's variables and the run's
    own set as properties, and those of the run before (``last``) cleared. One line
    with the code's first, so the code's line numbers stay its own."""
    said = [
        f"System.clearProperty({json.dumps(key)});" for key in sorted(last - sandbox_envs.keys())
    ]
    said += [
        f"System.setProperty({json.dumps(key)}, {json.dumps(value)});"
        for key, value in {**sandbox_envs, **envs}.items()
    ]
    return " ".join(said) + " " if said else ""


def chdir_code(language: str, path: str) -> str | None:
    """Code that makes ``path`` the working directory in ``language`` (None: none
    is needed or known). ``path`` is quoted as a JSON string, which every one of
    these languages reads as a string literal."""
    quoted = json.dumps(path)
    if language == "python":
        return f"import os as _lmc_os; _lmc_os.chdir({quoted}); del _lmc_os"
    if language in ("javascript", "typescript"):
        return f"process.chdir({quoted})"
    if language == "r":
        return f"invisible(setwd({quoted}))"
    if language == "java":
        return f'System.setProperty("user.dir", {quoted});'
    if language == "bash":
        return "cd " + "'" + path.replace("'", "'\\''") + "'"
    return None
