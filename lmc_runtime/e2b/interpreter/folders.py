"""The folders of one code context's interpreters, apart from the session's
own and every other context's: a control folder (connection files, FIFOs,
adopted sockets), which only the host writes, and a shared one, where its
interpreters make files of their own (unix sockets).

Apart, because an interpreter's files there are named by its language alone:
two Python kernels starting at once in one shared folder bound the same
``python-kernel-N`` sockets and took each other's.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from pathlib import Path

from ...sandbox import Sandbox
from ...sandbox.fileops import FileOpError, make_directory, remove
from ..errors import E2BError

__all__ = ["make_folders", "remove_folders"]

logger = logging.getLogger(__name__)


def make_folders(sandbox: Sandbox, name: str) -> tuple[Path, Path]:
    """New folders for the context ``name``'s interpreters: its control folder
    and its shared one (nothing is left made if either fails)."""
    control = _control_dir(sandbox, name)
    try:
        return control, _shared_dir(sandbox, name)
    except BaseException:
        shutil.rmtree(control, ignore_errors=True)
        raise


def _control_dir(sandbox: Sandbox, name: str) -> Path:
    """The host's files of one context's interpreters (connection files, FIFOs):
    in the sandbox's control folder, which only the host writes, made as that
    folder is."""
    folder = sandbox.control_dir / name  # short: kernels' socket paths end there
    folder.mkdir(mode=0o750)
    identity = sandbox.identity
    if identity is not None:
        os.chown(folder, 0, identity.gid)
    return folder


def _shared_dir(sandbox: Sandbox, name: str) -> Path:
    """Where one context's interpreters make files of their own (unix sockets):
    a new folder in the sandbox's shared folder, which the code may write, so
    made through held descriptors (never following a link the code put there)
    and named with a random part (the code cannot have made it first)."""
    relpath = f"{name}-{secrets.token_hex(3)}"
    try:
        make_directory(sandbox.shared_dir, relpath, parents=False, owner=sandbox.owner)
    except (FileOpError, OSError) as exc:
        raise E2BError(f"the context's folder could not be made: {exc}", 507) from exc
    return sandbox.shared_dir / relpath


def remove_folders(sandbox: Sandbox, control: Path, shared: Path) -> None:
    """Remove a closed context's folders (the shared one as the code's files are
    removed: through held descriptors, never following a link)."""
    shutil.rmtree(control, ignore_errors=True)
    try:
        remove(sandbox.shared_dir, shared.name, recursive=True)
    except (FileOpError, OSError) as exc:  # gone with the sandbox's files, then
        logger.debug("a context's folder %s was left: %s", shared.name, exc)
