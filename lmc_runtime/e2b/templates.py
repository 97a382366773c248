"""E2B's templates, as this server maps them: every known E2B template name
means the server's own sandbox (in its default environment, if it has one),
with every language it runs; any other template is an environment's name
(``lmc env create NAME``), whose sandbox runs in that environment."""

from __future__ import annotations

import weakref
from pathlib import Path

import anyio

from ..backends.registry import Registry
from ..environments.store import known_names
from .errors import E2BError

__all__ = ["KNOWN_TEMPLATES", "e2b_languages", "languages_for", "template_of"]

#: The template names E2B's SDKs and examples use, all served alike.
KNOWN_TEMPLATES = ("base", "code-interpreter-v1", "code-interpreter", "code-interpreter-beta")

#: The languages E2B's code interpreter runs, in lmc's names.
_E2B_LANGUAGES = ("python", "javascript", "typescript", "r", "java", "bash")


def template_of(name: str, data_dir: Path | None = None) -> tuple[str, str | None]:
    """The template ``name`` names and the environment it runs in (None: the
    server's default): a known E2B template, or an environment of ``data_dir``;
    a 404 naming them otherwise."""
    base = name.split(":", 1)[0]  # "name:tag"
    if base in KNOWN_TEMPLATES:
        return base, None
    environments = known_names(data_dir) if data_dir is not None else []
    if base in environments:
        return base, base
    known = ", ".join([*KNOWN_TEMPLATES, *environments])
    raise E2BError(f"template {name[:100]!r} was not found; this server has {known}", 404)


#: What :func:`languages_for` found, per registry: a server's languages are
#: looked up once (the first lookup runs each backend's availability check, which
#: starts interpreters), not on every create.
_FOUND: weakref.WeakKeyDictionary[Registry, list[str]] = weakref.WeakKeyDictionary()


async def e2b_languages(registry: Registry) -> list[str]:
    """:func:`languages_for`, looked up once in a worker thread, then remembered."""
    found = _FOUND.get(registry)
    if found is None:
        found = await anyio.to_thread.run_sync(languages_for, registry)
    return list(found)


def languages_for(registry: Registry) -> list[str]:
    """The languages an E2B sandbox gets: those of E2B's that run on this machine
    (blocking the first time; remembered for ``registry`` after)."""
    found = _FOUND.get(registry)
    if found is not None:
        return list(found)
    names: list[str] = []
    for name in _E2B_LANGUAGES:
        canonical = registry.resolve(name)
        if canonical is not None and registry.availability(canonical).available:
            names.append(canonical)
    _FOUND[registry] = names = names or ["python"]
    return list(names)
