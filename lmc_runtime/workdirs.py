"""The folders a Computer makes for itself (``lmc-*`` in the temporary directory),
marked with their owner, and the removal of those whose owner is gone.

A Computer removes its folders when it closes, but an owner that was killed
cannot. So each folder holds an owner file, ``.lmc-owner``, locked (``flock``)
by the process that made it for as long as the folder is in use. The lock goes
with that process's descriptors, however it ends, and only then can another
process take it: :func:`sweep`, called by the next start, removes the folders
whose lock it can take, and never one whose owner lives. The lock file is made
and locked under another name and then renamed into place, so a sweep never
sees a folder's owner file before its owner holds it. A folder without an
owner file is never removed, nor anything reached through a link.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from .removal import remove_tree

__all__ = ["OWNER_FILE", "WorkDir", "sweep"]

logger = logging.getLogger(__name__)

#: The owner's lock file in each folder.
OWNER_FILE = ".lmc-owner"
#: The names of the folders :func:`sweep` looks at.
PREFIX = "lmc-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class WorkDir:
    """A fresh folder ``lmc-<prefix>XXXX`` in ``parent`` (the temporary directory by
    default), locked by this process until :meth:`remove`."""

    def __init__(self, prefix: str = "", parent: Path | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{prefix}", dir=parent))
        self._lock = -1
        try:
            self._lock = _locked_owner_file(self.path)
        except OSError:  # no flock here (some network file systems): never swept
            logger.info("the folder %s cannot be marked with its owner", self.path, exc_info=True)

    def remove(self) -> None:
        """Remove the folder and everything in it (never following a link); idempotent."""
        lock, self._lock = self._lock, -1
        if lock < 0 and not self.path.exists():
            return
        _remove(self.path)
        if lock >= 0:
            os.close(lock)


def _locked_owner_file(folder: Path) -> int:
    """Make ``folder``'s owner file, locked by this process; its descriptor."""
    temporary = f"{OWNER_FILE}.{os.getpid()}"
    fd = os.open(folder / temporary, _FILE_FLAGS | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b"%d\n" % os.getpid())
        os.rename(folder / temporary, folder / OWNER_FILE)
    except OSError:
        os.close(fd)
        raise
    return fd


def sweep(parent: Path | None = None) -> list[Path]:
    """Remove every ``lmc-*`` folder in ``parent`` (the temporary directory by
    default) that this user owns, with an owner file nobody holds; the removed."""
    top = Path(parent if parent is not None else tempfile.gettempdir())
    try:
        top_fd = os.open(top, _DIR_FLAGS)
    except OSError:
        return []
    removed: list[Path] = []
    try:
        for name in os.listdir(top_fd):
            if name.startswith(PREFIX) and _abandoned(top, top_fd, name):
                removed.append(top / name)
    finally:
        os.close(top_fd)
    for folder in removed:
        logger.info("removed %s, left by a process that ended without closing", folder)
    return removed


def _abandoned(top: Path, top_fd: int, name: str) -> bool:
    """Whether folder ``name`` in ``top`` was ours, its owner gone, and it is now removed."""
    try:
        folder = os.open(name, _DIR_FLAGS, dir_fd=top_fd)
    except OSError:  # not a folder, a link, or gone
        return False
    try:
        if os.fstat(folder).st_uid != os.geteuid():
            return False
        try:
            lock = os.open(OWNER_FILE, _FILE_FLAGS, dir_fd=folder)
        except OSError:
            return False
        try:
            if not stat.S_ISREG(os.fstat(lock).st_mode):
                return False
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held: its owner lives
                return False
            # Ours now (only its owner can move it in a sticky folder): removed under the lock.
            return _remove(top / name)
        finally:
            os.close(lock)
    finally:
        os.close(folder)


def _remove(folder: Path) -> bool:
    """Remove ``folder`` without following links (with :func:`remove_tree` on
    Linux, which also takes folders the code locked); whether it is gone."""
    if sys.platform.startswith("linux"):
        return not remove_tree(folder)
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()
