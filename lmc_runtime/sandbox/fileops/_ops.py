"""Listing, stat, making and removing folders and files in a session's directory.

The session's code may be writing where these work: that is the normal case.
An entry that appears, goes or changes kind meanwhile is taken as it is found
next; a recursive removal empties its folder again until it can be removed, at
most :data:`REMOVE_ROUNDS` times, then answers :class:`KeptChanging` (a 409
conflict), never an I/O error.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..files import safe_parts
from ._walk import FileInfo, Owner, lstat_at, open_dir, refuse_special, walk
from .errors import AlreadyExists, FileOpError, NoSuchFile, NotADirectory, NotEmpty, Refused

__all__ = [
    "KeptChanging",
    "Listing",
    "list_directory",
    "lstat_path",
    "make_directory",
    "remove",
    "stat_path",
]

#: The most entries a listing returns (a folder of millions is cut, and says so).
MAX_ENTRIES = 10_000
#: The deepest a recursive removal goes below the folder it removes.
MAX_TREE_DEPTH = 256
#: How many times a removal or a folder's making tries again when the code changed
#: what it works on meanwhile.
REMOVE_ROUNDS = 16
#: What a removal's call meets when the code changed an entry since it was read.
_CHANGED = (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST, errno.EISDIR, errno.ENOTDIR)


class KeptChanging(NotEmpty):
    """The session's code kept changing the folder while it was removed or made."""

    def __init__(self, path: str, doing: str) -> None:
        FileOpError.__init__(
            self,
            path,
            f"{path!r} kept changing while it was {doing} (the session's code writes "
            "there); try again",
        )


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


def lstat_path(root: Path, relpath: str) -> os.stat_result:
    """``lstat`` of ``root/relpath`` (a plain relative path), reached without
    following a link on the way; the last component itself is not followed."""
    parts = safe_parts(relpath)
    fd = walk(root, parts[:-1], relpath)
    try:
        return lstat_at(fd, parts[-1], relpath)
    finally:
        os.close(fd)


def stat_path(root: Path, relpath: str) -> FileInfo:
    """The file or folder at ``root/relpath``; a link, FIFO... is refused."""
    info = lstat_path(root, relpath)
    refuse_special(info, relpath)
    return FileInfo.of(relpath, info)


def make_directory(
    root: Path, relpath: str, *, parents: bool, owner: Owner | None = None
) -> FileInfo:
    """Make the folder ``root/relpath`` (and missing ones on its way when
    ``parents``), owned by ``owner`` when given.

    An existing folder is fine when ``parents`` is set; anything else there is
    :class:`AlreadyExists`. A link, FIFO... on the way is refused, never followed.
    """
    parts = safe_parts(relpath)
    fd = walk(root, parts[:-1], relpath, create=parents, owner=owner)
    try:
        for _ in range(REMOVE_ROUNDS):
            try:
                os.mkdir(parts[-1], 0o755, dir_fd=fd)
                break
            except FileExistsError:
                try:
                    info = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed by the code since: made again
                if parents and stat.S_ISDIR(info.st_mode):
                    return FileInfo.of(relpath, info)
                raise AlreadyExists(relpath) from None
        else:
            raise KeptChanging(relpath, "made")
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
    only when ``recursive`` (:class:`NotEmpty` otherwise). The target may
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
            _remove_tree(fd, name, relpath)
            return
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise NotEmpty(relpath) from None
            raise
    finally:
        os.close(fd)


def _remove_tree(fd: int, name: str, relpath: str) -> None:
    """Empty the folder ``name`` in ``fd`` and remove it, again while the code adds
    entries to it, :data:`REMOVE_ROUNDS` times at most (then :class:`KeptChanging`).
    A folder the code removed itself meanwhile is removed as asked."""
    for _ in range(REMOVE_ROUNDS):
        try:
            child = open_dir(fd, name, relpath)
        except NoSuchFile:
            return
        try:
            _empty_tree(child, relpath, MAX_TREE_DEPTH)
        finally:
            os.close(child)
        try:
            os.rmdir(name, dir_fd=fd)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
    raise KeptChanging(relpath, "removed")


def _empty_tree(fd: int, relpath: str, depth: int) -> None:
    """Remove what is in the folder ``fd``, each entry relative to its folder's
    descriptor, sub-folders opened without following links, ``depth`` levels at most.

    An entry the code removed, replaced or filled again meanwhile is left for the
    caller's next round (the folder's rmdir then says it is not empty)."""
    if depth == 0:
        raise Refused(relpath, f"holds folders more than {MAX_TREE_DEPTH} levels deep")
    with os.scandir(fd) as scan:
        names = [entry.name for entry in scan]
    for name in names:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode):
                os.unlink(name, dir_fd=fd)
                continue
            try:
                child = open_dir(fd, name, f"{relpath}/{name}")
            except (NoSuchFile, NotADirectory, Refused):
                continue  # gone, or swapped for a file or a link: seen next round
            try:
                _empty_tree(child, relpath, depth - 1)
            finally:
                os.close(child)
            os.rmdir(name, dir_fd=fd)
        except OSError as exc:
            if exc.errno not in _CHANGED:
                raise
