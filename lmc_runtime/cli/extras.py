"""The optional extras of the package, and the check that a command has its own."""

from __future__ import annotations

from importlib.util import find_spec

from ..errors import MissingExtra

__all__ = ["EXTRA_MODULES", "require_extra"]

#: The modules each extra brings that the commands needing it import.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "serve": ("fastapi", "starlette", "uvicorn", "websockets"),
    "repl": ("prompt_toolkit", "rich", "pygments"),
    "agent": ("httpx",),
    "plot": ("matplotlib",),
}


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, a half-removed package
        return False


def require_extra(what: str, extra: str) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` can be imported."""
    for module in EXTRA_MODULES[extra]:
        if not _installed(module):
            raise MissingExtra(what, extra, missing=module)
