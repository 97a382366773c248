"""How a media helper (Chromium, the cairosvg worker) is started: the value the
backends build from their session's settings, so that the helpers know nothing
of sessions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..lifeline import Lifeline

__all__ = ["Launch"]


def _as_is(argv: Sequence[str]) -> list[str]:
    return list(argv)


@dataclass(frozen=True)
class Launch:
    """Where and how to start a helper process.

    ``wrap`` turns a command line into the one to run (a session's sandbox, user
    and cgroup); ``cwd`` and ``env`` (added to the host's environment) are the
    process's. ``work_dir`` is a folder only the host writes; ``shared_dir`` one
    the helper may write, read back only through a held descriptor. ``lifeline``,
    if set, holds the helper while it runs, so that it ends with the process that
    started it, however that process ends.
    """

    work_dir: Path
    shared_dir: Path
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)
    wrap: Callable[[Sequence[str]], list[str]] = _as_is
    lifeline: Lifeline | None = None

    @classmethod
    def local(cls, folder: Path) -> Launch:
        """A helper of the library's own process, in ``folder`` of its own."""
        return cls(work_dir=folder, shared_dir=folder, cwd=folder)
