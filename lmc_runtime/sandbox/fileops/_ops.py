"""Listing, stat, making and removing folders and files in a session's directory."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ...errors import DirectoryNotEmpty, FileExists, PathRefused, SessionFileNotFound
from ..files import safe_parts
from ._walk import FileInfo, Owner, lstat_at, open_dir, refuse_special, walk

__all__ = ["Listing", "list_directory", "make_directory", "remove", "stat_path"]

#: The most entries a listing returns (a folder of millions is cut, and says so).
MAX_ENTRIES = 10_000
#: The deepest a recursive removal goes below the folder it removes.
MAX_TREE_DEPTH = 256


@dataclass(frozen=True)
class Listing:
    """A folder's entries sorted by name; ``truncated`` when there were more."""

    path: str
    entries: list[FileInfo]
    truncated: bool


def _parts(relpath: str) -> list[str]:
    return [] if relpath == "" else safe_parts(relpath)


def list_directory(root: Path, relpath: str, *, limit: int = MAX_ENTRIES) -> Listing:
    """The entries of the folder ``root/relpath`` (``""``: the working directory),
    each ``lstat``-ed, never followed; at most ``limit`` of them."""
    fd = walk(root, _parts(relpath), relpath)
    entries: list[FileInfo] = []
    truncated = False
    try:
        with os.scandir(fd) as scan:
            for entry in scan:
                if len(entries) == limit:
                    truncated = True
                    break
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:  # removed since it was read
                    continue
                name = entry.name.encode(errors="surrogateescape").decode(errors="replace")
                path = f"{relpath}/{name}" if relpath else name
                entries.append(FileInfo.of(path, info))
    finally:
        os.close(fd)
    entries.sort(key=lambda info: info.name)
    return Listing(path=relpath, entries=entries, truncated=truncated)


def stat_path(root: Path, relpath: str) -> FileInfo:
    """The file or folder at ``root/relpath``; a link, FIFO... is refused."""
    parts = safe_parts(relpath)
    fd = walk(root, parts[:-1], relpath)
    try:
        info = lstat_at(fd, parts[-1], relpath)
    finally:
        os.close(fd)
    refuse_special(info, relpath)
    return FileInfo.of(relpath, info)


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


def remove(root: Path, relpath: str, *, recursive: bool) -> None:
    """Remove the file or folder at ``root/relpath``; a folder that is not empty
    only when ``recursive`` (:class:`DirectoryNotEmpty` otherwise). The target may
    not be a link, FIFO...; inside a removed tree those are unlinked, never followed."""
    parts = safe_parts(relpath)
    fd = walk(root, parts[:-1], relpath)
    try:
        name = parts[-1]
        info = lstat_at(fd, name, relpath)
        refuse_special(info, relpath)
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(name, dir_fd=fd)
            return
        if recursive:
            child = open_dir(fd, name, relpath)
            try:
                _empty_tree(child, relpath, MAX_TREE_DEPTH)
            finally:
                os.close(child)
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise DirectoryNotEmpty(relpath) from None
            raise
    finally:
        os.close(fd)


def _empty_tree(fd: int, relpath: str, depth: int) -> None:
    """Remove everything in the folder ``fd``, each entry relative to its folder's
    descriptor, sub-folders opened without following links, ``depth`` levels at most."""
    if depth == 0:
        raise PathRefused(relpath, f"holds folders more than {MAX_TREE_DEPTH} levels deep")
    with os.scandir(fd) as scan:
        names = [entry.name for entry in scan]
    for name in names:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode):
                os.unlink(name, dir_fd=fd)
                continue
            child = open_dir(fd, name, f"{relpath}/{name}")
            try:
                _empty_tree(child, relpath, depth - 1)
            finally:
                os.close(child)
            os.rmdir(name, dir_fd=fd)
        except (FileNotFoundError, SessionFileNotFound):  # gone already
            continue
