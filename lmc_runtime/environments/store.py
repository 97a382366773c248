"""Where environments live (``<data dir>/environments/NAME``), their manifests,
and the checks that say whether one can run sessions.

The manifest (``lmc-environment.json``) is written last, atomically, by
:mod:`.build`: a folder without one is not an environment yet (a build that
died), and one whose ``state`` is not ``ready`` is refused. A lookup reads the
disk and starts nothing, so it may run on every session's creation.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..sandbox.environment import Environment, name_problem
from .errors import EnvironmentBroken, UnknownEnvironment

__all__ = [
    "MANIFEST",
    "Manifest",
    "environment_dir",
    "environments_dir",
    "find_environment",
    "list_environments",
    "remove_environment",
    "unseen_python",
]

logger = logging.getLogger(__name__)

#: The manifest's file name inside an environment's folder.
MANIFEST = "lmc-environment.json"
#: The states a manifest may record.
STATES = ("ready", "broken")


@dataclass(frozen=True)
class Manifest:
    """What ``lmc env create`` made: the Python's version, the packages asked for
    (``pip``, ``requirements`` files' lines, ``npm``), when, and its ``state``."""

    name: str
    python: str
    created: str
    state: str = "ready"
    pip: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    npm: list[str] = field(default_factory=list)
    reason: str = ""

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """The manifest ``text`` holds; ValueError saying what is wrong with it."""
        data: Any = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("it is not a JSON object")
        for key in ("name", "python", "created", "state"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"its {key!r} is missing or not a string")
        if data["state"] not in STATES:
            raise ValueError(f"its state {data['state']!r} is not one of {', '.join(STATES)}")
        lists = {}
        for key in ("pip", "requirements", "npm"):
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"its {key!r} is not a list of strings")
            lists[key] = value
        reason = data.get("reason", "")
        return cls(
            name=data["name"],
            python=data["python"],
            created=data["created"],
            state=data["state"],
            reason=reason if isinstance(reason, str) else "",
            **lists,
        )


def environments_dir(data_dir: Path) -> Path:
    """The folder of a data directory's environments."""
    return data_dir / "environments"


def environment_dir(data_dir: Path, name: str) -> Path:
    """The folder of environment ``name`` (whose name is checked first)."""
    problem = name_problem(name)
    if problem is not None:
        raise UnknownEnvironment(name, known_names(data_dir))
    return environments_dir(data_dir) / name


def known_names(data_dir: Path) -> list[str]:
    """The names of the environments there are (each folder with a manifest)."""
    folder = environments_dir(data_dir)
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    return [
        entry
        for entry in entries
        if name_problem(entry) is None and (folder / entry / MANIFEST).is_file()
    ]


def read_manifest(root: Path) -> Manifest:
    """The manifest of the environment folder ``root``; ValueError if it is unreadable."""
    try:
        text = (root / MANIFEST).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"its manifest cannot be read ({exc.strerror or exc})") from None
    try:
        return Manifest.from_json(text)
    except ValueError as exc:
        raise ValueError(f"its manifest is not valid: {exc}") from None


def _problem(root: Path, manifest: Manifest) -> str | None:
    """What keeps the environment in ``root`` from running sessions, or None."""
    if manifest.state != "ready":
        return f"its manifest says it is {manifest.state}" + (
            f" ({manifest.reason})" if manifest.reason else ""
        )
    python = root / "bin" / "python"
    if not os.access(python, os.X_OK):
        return f"its Python, {python}, is missing or cannot be run"
    unseen = unseen_python(python)
    if unseen is not None:
        return unseen
    site = root / "lib" / f"python{manifest.python}" / "site-packages"
    if not (site / "ipykernel" / "__init__.py").is_file():
        return f"ipykernel is not installed in it ({site}); rebuild it with `lmc env create`"
    return None


def unseen_python(python: Path) -> str | None:
    """Why sandboxes cannot run ``python`` (a virtualenv's is a link to the Python
    it was made with, which must be in a folder every sandbox sees), or None."""
    from ..sandbox.bwrap import system_paths

    target = Path(os.path.realpath(python))
    seen = system_paths()
    if any(target == folder or folder in target.parents for folder in seen):
        return None
    return (
        f"its Python is {target}, which sandboxes do not see; make it with a --python "
        f"under one of {', '.join(str(folder) for folder in seen[:8])}"
    )


def find_environment(data_dir: Path, name: str) -> Environment:
    """The ready environment ``name``: :class:`UnknownEnvironment` if there is none,
    :class:`EnvironmentBroken` saying why if it cannot run sessions."""
    root = environment_dir(data_dir, name)
    if not root.is_dir() or not (root / MANIFEST).exists():
        raise UnknownEnvironment(name, known_names(data_dir))
    try:
        manifest = read_manifest(root)
    except ValueError as exc:
        raise EnvironmentBroken(name, str(exc)) from None
    problem = _problem(root, manifest)
    if problem is not None:
        raise EnvironmentBroken(name, problem)
    return Environment(name, root, manifest.python, node=(root / "node_modules").is_dir())


@dataclass(frozen=True)
class Listed:
    """One environment as ``lmc env list`` shows it: its manifest (None if
    unreadable) and what is wrong with it (None if it is ready)."""

    name: str
    manifest: Manifest | None
    problem: str | None


def list_environments(data_dir: Path) -> list[Listed]:
    """Every environment of ``data_dir``, ready or not, by name."""
    listed = []
    for name in known_names(data_dir):
        root = environments_dir(data_dir) / name
        try:
            manifest: Manifest | None = read_manifest(root)
        except ValueError as exc:
            listed.append(Listed(name, None, str(exc)))
            continue
        assert manifest is not None
        listed.append(Listed(name, manifest, _problem(root, manifest)))
    return listed


def remove_environment(data_dir: Path, name: str) -> None:
    """Remove environment ``name`` (ready or not): :class:`UnknownEnvironment` if
    there is no such folder. Sessions running in it keep what they opened."""
    root = environment_dir(data_dir, name)
    if not root.is_dir() or root.is_symlink():
        raise UnknownEnvironment(name, known_names(data_dir))
    # Out of sight first (a rename is atomic), then removed.
    doomed = root.with_name(f".{name}.removing-{os.getpid()}")
    os.rename(root, doomed)
    shutil.rmtree(doomed)
    logger.info("removed the environment %s", name)
