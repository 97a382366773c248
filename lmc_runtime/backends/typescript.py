"""TypeScript on the node runner: each cell is transpiled (``transpileModule``, no type
check) and run, reporting its own lines; ``lmc setup`` installs the package next to
the runner (``kernels/lmc-node/node_modules``)."""

from __future__ import annotations

import json
from pathlib import Path

from .base import Availability
from .node import NodeBackend
from .node.backend import runner_path

__all__ = ["TypeScriptBackend", "node_packages_dir", "typescript_dir"]


def node_packages_dir() -> Path:
    """The runner's folder: its ``package-lock.json`` pins what npm installs there."""
    return runner_path().parent


def typescript_dir() -> Path:
    """Where the ``typescript`` package is (or will be) installed."""
    return node_packages_dir() / "node_modules" / "typescript"


def _installed_version(package: Path) -> str | None:
    try:
        found = json.loads((package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = found.get("version") if isinstance(found, dict) else None
    return version if isinstance(version, str) else None


class TypeScriptBackend(NodeBackend):
    """Node sessions whose runner takes TypeScript."""

    def availability(self) -> Availability:
        node = super().availability()
        if not node.available:
            return node
        if _installed_version(typescript_dir()) is None:
            return Availability.no(
                f"the typescript npm package is not installed in {typescript_dir().parent}:"
                " run `lmc setup`"
            )
        return Availability.yes()

    def runner_env(self) -> dict[str, str]:
        return {
            **super().runner_env(),
            "LMC_NODE_LANGUAGE": "typescript",
            "LMC_TYPESCRIPT": str(typescript_dir()),
        }
