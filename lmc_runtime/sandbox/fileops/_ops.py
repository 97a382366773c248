"""Listing, stat, making and removing folders and files in a session's directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ...errors import FileExists
from ..files import safe_parts
from ._walk import FileInfo, Owner, open_dir, walk

__all__ = ["make_directory"]


def make_directory(
    root: Path, relpath: str, *, parents: bool, owner: Owner | None = None
) -> FileInfo:
    """Make the folder ``root/relpath`` (and missing ones on its way when
    ``parents``), owned by ``owner`` when given.

    An existing folder is fine when ``parents`` is set; anything else there is
    :class:`FileExists`. A link, FIFO... on the way is refused, never followed.
    """
    parts = safe_parts(relpath)
    fd = walk(root, parts[:-1], relpath, create=parents, owner=owner)
    try:
        try:
            os.mkdir(parts[-1], 0o755, dir_fd=fd)
        except FileExistsError:
            info = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            if parents and stat.S_ISDIR(info.st_mode):
                return FileInfo.of(relpath, info)
            raise FileExists(relpath) from None
        new_fd = open_dir(fd, parts[-1], relpath)
        try:
            if owner is not None:
                os.fchown(new_fd, *owner)
            return FileInfo.of(relpath, os.fstat(new_fd))
        finally:
            os.close(new_fd)
    finally:
        os.close(fd)
