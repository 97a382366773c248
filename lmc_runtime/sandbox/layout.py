"""The folders of a session's disk, made and owned as the sandbox needs them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from .bwrap import SANDBOX_GID, SANDBOX_UID
from .commands import write_commands
from .environment import Environment
from .identity import Identity
from .view import SandboxView, user_site

__all__ = ["OnDisk", "make_disk_layout"]


class _Rooted(Protocol):
    root: Path


class OnDisk:
    """A folder of a session's disk, by name: an attribute of the sandbox
    (``root/disk/<name>``), read-only."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, sandbox: _Rooted, owner: type | None = None) -> Path:
        return sandbox.root / "disk" / self.name


def make_disk_layout(
    disk: Path,
    view: SandboxView,
    output_dir: Path,
    identity: Identity | None,
    environment: Environment | None = None,
) -> None:
    """Inside the session's ``disk``: the code's folders (its home and the shared
    one), owned by its user (``identity``, when it has a host uid of its own);
    the host-only folder of spill files (``output_dir``); the control folder,
    which the session's group may read and nobody else may enter, with the
    accounts and the commands the code sees (``environment``'s Python, if given);
    the runtime folder. Blocking."""
    os.chmod(disk, 0o711 if identity is not None else 0o700)
    for path in (view.home, view.shared):
        if path is None:
            continue
        path.mkdir(mode=0o700, exist_ok=True)
        if identity is not None:
            os.chown(path, identity.uid, identity.gid)
    output_dir.mkdir(mode=0o700, exist_ok=True)
    control = view.control
    assert control is not None
    control.mkdir(mode=0o750, exist_ok=True)
    if identity is not None:
        os.chown(control, 0, identity.gid)
    # The user site folder exists from the start, so every Python puts it on sys.path.
    owner = (identity.uid, identity.gid) if identity is not None else None
    version = environment.version if environment is not None else None
    view.make_runtime(owner, ["ipython", user_site("local", version)])
    view.write_accounts(SANDBOX_UID, SANDBOX_GID)
    if environment is None:
        write_commands(control / "bin")
    else:
        write_commands(control / "bin", str(environment.python), environment.path_entries())
