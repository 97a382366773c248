"""envd's ``EntryInfo`` of the files in a sandbox's home, as the host sees them
through held descriptors (:mod:`lmc_runtime.sandbox.fileops`): every entry is
``lstat``-ed relative to its folder's descriptor, never followed.

A symbolic link is told as one (``FILE_TYPE_SYMLINK``, ``is_symlink``) with its
target as the sandbox would resolve it (``symlink_target``, the link's text
made absolute); the host reads the link's text, never what it points at.
Blocking: run in a worker thread.
"""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path

from ...sandbox.fileops import MAX_ENTRIES, NoSuchFile, NotADirectory, Refused
from ...sandbox.fileops._walk import lstat_at, open_dir, walk
from ...sandbox.files import DIR_FLAGS, safe_parts
from ..errors import E2BError
from .paths import inside
from .proto import filesystem_pb2 as fs

__all__ = ["MAX_DEPTH", "entry_at", "entry_of", "list_entries"]

#: The deepest a listing goes (``depth``), and the most entries it returns.
MAX_DEPTH = 32


def _kind(mode: int) -> fs.FileType:
    if stat.S_ISDIR(mode):
        return fs.FILE_TYPE_DIRECTORY
    if stat.S_ISLNK(mode):
        return fs.FILE_TYPE_SYMLINK
    if stat.S_ISREG(mode):
        return fs.FILE_TYPE_FILE
    return fs.FILE_TYPE_UNSPECIFIED


def _account(uid: int, owner: tuple[int, int] | None) -> str:
    if uid == (owner[0] if owner is not None else os.getuid()):
        return "user"
    return "root" if uid == 0 else str(uid)


def _group(gid: int, owner: tuple[int, int] | None) -> str:
    if gid == (owner[1] if owner is not None else os.getgid()):
        return "user"
    return "root" if gid == 0 else str(gid)


def _shown(text: str) -> str:
    """``text`` as valid UTF-8 (a name that is not is shown with U+FFFD)."""
    return text.encode(errors="surrogateescape").decode(errors="replace")


def entry_of(
    relpath: str,
    info: os.stat_result,
    owner: tuple[int, int] | None,
    link: str | None = None,
) -> fs.EntryInfo:
    """The ``EntryInfo`` of ``relpath`` (relative to the home) whose ``lstat`` is
    ``info``; ``link``: a symbolic link's text."""
    where = _shown(inside(relpath))
    entry = fs.EntryInfo(
        name=posixpath.basename(where),
        type=_kind(info.st_mode),
        path=where,
        size=info.st_size,
        mode=stat.S_IMODE(info.st_mode),
        permissions=stat.filemode(info.st_mode),
        owner=_account(info.st_uid, owner),
        group=_group(info.st_gid, owner),
    )
    entry.modified_time.FromNanoseconds(info.st_mtime_ns)
    if stat.S_ISLNK(info.st_mode) and link is not None:
        entry.is_symlink = True
        target = posixpath.join(posixpath.dirname(where), _shown(link))
        entry.symlink_target = posixpath.normpath(target)
    return entry


def _read_link(dir_fd: int, name: str, info: os.stat_result) -> str | None:
    if not stat.S_ISLNK(info.st_mode):
        return None
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


def entry_at(root: Path, relpath: str, owner: tuple[int, int] | None) -> fs.EntryInfo:
    """The entry at ``relpath`` (``""``: the home), a link told as one."""
    if not relpath:
        fd = os.open(root, DIR_FLAGS)
        try:
            return entry_of("", os.fstat(fd), owner)
        finally:
            os.close(fd)
    parts = safe_parts(relpath)
    fd = walk(root, parts[:-1], relpath)
    try:
        info = lstat_at(fd, parts[-1], relpath)
        return entry_of(relpath, info, owner, _read_link(fd, parts[-1], info))
    finally:
        os.close(fd)


def list_entries(
    root: Path, relpath: str, depth: int, owner: tuple[int, int] | None
) -> list[fs.EntryInfo]:
    """The entries of the folder ``relpath``, and of its folders down to ``depth``
    levels (1: its own entries), in the order of a walk by name; links are listed,
    never entered. More than :data:`MAX_ENTRIES` is refused (413)."""
    depth = min(max(depth, 1), MAX_DEPTH)
    fd = walk(root, safe_parts(relpath) if relpath else [], relpath)
    out: list[fs.EntryInfo] = []
    try:
        _list_into(out, fd, relpath, depth, owner)
    finally:
        os.close(fd)
    return out


def _list_into(
    out: list[fs.EntryInfo], fd: int, relpath: str, depth: int, owner: tuple[int, int] | None
) -> None:
    with os.scandir(fd) as scan:
        names = sorted(entry.name for entry in scan)
    for name in names:
        path = f"{relpath}/{name}" if relpath else name
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:  # removed since it was read
            continue
        if len(out) == MAX_ENTRIES:
            raise E2BError(
                f"{inside(relpath)} holds more than {MAX_ENTRIES} entries at this depth; "
                "list a smaller depth or a folder below it",
                413,
            )
        out.append(entry_of(path, info, owner, _read_link(fd, name, info)))
        if depth > 1 and stat.S_ISDIR(info.st_mode):
            try:
                child = open_dir(fd, name, path)
            except (NoSuchFile, NotADirectory, Refused):
                continue  # gone, or swapped for a file or a link since
            try:
                _list_into(out, child, path, depth - 1, owner)
            finally:
                os.close(child)
