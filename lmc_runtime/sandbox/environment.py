"""An environment as a session uses it: a folder the operator made with ``lmc env
create``, holding a virtualenv (its own interpreter and packages, never the
host's site-packages) and, when asked, a ``node_modules`` folder.

The sandbox binds the folder read-only at the same path it has on the host (a
virtualenv knows its prefix by where its interpreter is), puts its ``bin`` on
``PATH`` and its ``node_modules`` on ``NODE_PATH``, and the Python kernel runs on
its interpreter. Nothing here reads the disk; :mod:`lmc_runtime.environments.store` finds them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NAME_PATTERN", "Environment", "name_problem"]

#: What an environment's name must look like (it is a folder's name, and an E2B template's).
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an environment, or None."""
    if NAME_PATTERN.fullmatch(name):
        return None
    return (
        f"{name[:80]!r} is not an environment name: use 1 to 63 lowercase letters, "
        "digits, '_' and '-', starting with a letter or digit"
    )


@dataclass(frozen=True)
class Environment:
    """A ready environment: ``root`` its folder, ``version`` its Python's
    ``major.minor``, ``node`` whether it has a ``node_modules`` folder."""

    name: str
    root: Path
    version: str
    node: bool = False

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        """The interpreter the session's Python kernel and ``python`` commands run."""
        return self.bin / "python"

    @property
    def node_modules(self) -> Path | None:
        return self.root / "node_modules" if self.node else None

    def path_entries(self) -> list[str]:
        """What goes first on a session's ``PATH``: its ``bin``, then its node commands."""
        entries = [str(self.bin)]
        if self.node_modules is not None:
            entries.append(str(self.node_modules / ".bin"))
        return entries

    def variables(self, runtime: str) -> dict[str, str]:
        """The variables a session in it gets: ``VIRTUAL_ENV``, ``NODE_PATH``, and
        pip installing into the runtime folder's user site (``runtime``), which a
        virtualenv leaves off ``sys.path`` unless it is named there."""
        site = f"{runtime}/local/lib/python{self.version}/site-packages"
        env = {"VIRTUAL_ENV": str(self.root), "PIP_TARGET": site, "PYTHONPATH": site}
        if self.node_modules is not None:
            env["NODE_PATH"] = str(self.node_modules)
        return env
