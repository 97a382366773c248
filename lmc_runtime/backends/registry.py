"""A lazy registry of backends.

Entries name a backend by ``"module:attribute"``; the module is imported the
first time the language is used, so importing lmc-runtime stays cheap and a
backend whose dependencies are missing only fails for its own language.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import Availability, Backend

if TYPE_CHECKING:
    from .jupyter.gateway.rest import Gateway

__all__ = ["BackendEntry", "Registry", "default_entries"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BackendEntry:
    """A language, its aliases, and where its backend lives."""

    name: str
    target: str
    aliases: tuple[str, ...] = ()
    #: Keyword arguments for the backend's constructor, as (name, value) pairs.
    options: tuple[tuple[str, Any], ...] = ()


def _option(name: str, value: object) -> tuple[tuple[str, Any], ...]:
    return () if value is None else ((name, value),)


def _kernel(name: str, value: str | None, gateway: Gateway | None) -> tuple[tuple[str, Any], ...]:
    """A Jupyter language's options: its own interpreter, else the gateway, if any."""
    return _option(name, value) if value is not None else _option("gateway", gateway)


def default_entries(
    *,
    python: str | None = None,
    r: str | None = None,
    node: str | None = None,
    gateway: Gateway | None = None,
) -> tuple[BackendEntry, ...]:
    """The backends lmc-runtime ships; ``python``, ``r`` and ``node`` are passed to
    the backends of those languages, ``gateway`` to Python's and R's unless they
    were given an interpreter (see :class:`Registry`)."""
    return (
        BackendEntry(
            "python",
            "lmc_runtime.backends.python:PythonBackend",
            ("py", "python3", "ipython"),
            _kernel("python", python, gateway),
        ),
        BackendEntry("shell", "lmc_runtime.backends.shell:BashBackend", ("bash",)),
        BackendEntry("sh", "lmc_runtime.backends.shell:ShBackend"),
        BackendEntry("zsh", "lmc_runtime.backends.shell:ZshBackend"),
        BackendEntry(
            "javascript",
            "lmc_runtime.backends.node:NodeBackend",
            ("js", "node", "nodejs"),
            _option("node", node),
        ),
        BackendEntry(
            "typescript",
            "lmc_runtime.backends.typescript:TypeScriptBackend",
            ("ts",),
            _option("node", node),
        ),
        BackendEntry("java", "lmc_runtime.backends.java:JavaBackend", ("jshell",)),
        BackendEntry("r", "lmc_runtime.backends.r:RBackend", ("R",), _kernel("r", r, gateway)),
        BackendEntry(
            "applescript", "lmc_runtime.backends.applescript:AppleScriptBackend", ("osascript",)
        ),
        BackendEntry("html", "lmc_runtime.backends.html:HtmlBackend"),
    )


class Registry:
    """Maps language names and aliases to backends, importing them on first use.

    ``entries`` default to :func:`default_entries`; with those, ``python`` runs
    Python in another interpreter (a path such as a venv's ``bin/python``, or
    the name of an installed kernelspec; it needs ipykernel), ``r`` R in
    another R front end (a path; it needs IRkernel) and ``node`` JavaScript and
    TypeScript in another node. Without them, the runtime's own interpreter
    and the R and node on PATH run the code. ``gateway`` runs Python and R
    kernels on a Jupyter gateway (those not given an interpreter).
    """

    def __init__(
        self,
        entries: Iterable[BackendEntry] | None = None,
        *,
        python: str | None = None,
        r: str | None = None,
        node: str | None = None,
        gateway: Gateway | None = None,
    ) -> None:
        if entries is not None and (python, r, node, gateway) != (None, None, None, None):
            raise TypeError("python, r, node and gateway apply to the default entries only")
        self._entries: dict[str, BackendEntry] = {}
        self._names: dict[str, str] = {}
        self._loaded: dict[str, Backend] = {}
        if entries is None:
            entries = default_entries(python=python, r=r, node=node, gateway=gateway)
        for entry in entries:
            self.add(entry)

    def add(self, entry: BackendEntry, backend: Backend | None = None) -> None:
        """Register ``entry``; ``backend`` supplies an instance directly (for tests)."""
        self._entries[entry.name] = entry
        for name in (entry.name, *entry.aliases):
            self._names[name.lower()] = entry.name
        if backend is not None:
            self._loaded[entry.name] = backend
        else:
            self._loaded.pop(entry.name, None)

    def resolve(self, language: str) -> str | None:
        """The canonical name for ``language`` or one of its aliases, else None."""
        return self._names.get(language.lower())

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def entry(self, name: str) -> BackendEntry:
        return self._entries[name]

    def get(self, name: str) -> Backend:
        """The backend for canonical ``name``; raises whatever loading it raised."""
        backend = self._loaded.get(name)
        if backend is None:
            entry = self._entries[name]
            module_name, _, attr = entry.target.partition(":")
            factory = getattr(importlib.import_module(module_name), attr)
            backend = factory(**dict(entry.options))
            self._loaded[name] = backend
        return backend

    def availability(self, name: str) -> Availability:
        """Whether ``name`` can run here; a backend that fails to import cannot."""
        try:
            return self.get(name).availability()
        except Exception as exc:  # a broken backend must not break the others
            logger.debug("backend %s failed to load", name, exc_info=True)
            return Availability.no(f"its backend could not be loaded: {exc!r}")
