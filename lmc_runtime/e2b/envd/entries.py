"""envd's ``EntryInfo`` of the files in a sandbox's home, as the host sees them
through held descriptors (:mod:`lmc_runtime.sandbox.fileops`): every entry is
``lstat``-ed relative to its folder's descriptor, never followed.

A symbolic link is told as envd tells it: ``is_symlink``, its target as the
sandbox would name it (``symlink_target``, the link's text made absolute), and
in ``type`` the kind of that target when it is in the home, found by walking
there from the home's descriptor as any path is (``FILE_TYPE_SYMLINK`` when it
is not: outside the home, missing, or a link again). The host never opens
through the link itself.

``metadata``: the file's ``user.e2b.*`` extended attributes (envd 0.6.2),
read with the ``*xattr`` calls on ``/proc/self/fd/<folder's descriptor>/<name>``
without following the name.

Blocking: run in a worker thread.
"""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path

from ...errors import LMCError
from ...sandbox.fileops import MAX_ENTRIES, FileOpError, NoSuchFile, NotADirectory, Refused
from ...sandbox.fileops._ops import lstat_path
from ...sandbox.fileops._walk import lstat_at, open_dir, walk
from ...sandbox.files import DIR_FLAGS, safe_parts
from ..errors import E2BError
from .paths import inside, relpath_of
from .proto import filesystem_pb2 as fs

__all__ = [
    "MAX_DEPTH",
    "METADATA_PREFIX",
    "entry_at",
    "entry_of",
    "list_entries",
    "metadata_at",
]

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


#: The extended attributes shown as an entry's metadata, and their bounds (the
#: code may set bigger ones: they are not shown).
METADATA_PREFIX = "user.e2b."
_MAX_METADATA = 64
_MAX_METADATA_BYTES = 4096


def metadata_at(dir_fd: int, name: str | None) -> dict[str, str]:
    """The metadata of ``name`` in the folder ``dir_fd`` (None: the folder itself)."""
    where: int | str = dir_fd if name is None else f"/proc/self/fd/{dir_fd}/{name}"
    found: dict[str, str] = {}
    size = 0
    try:
        names = os.listxattr(where, follow_symlinks=False)
        for attribute in names:
            if not attribute.startswith(METADATA_PREFIX) or len(found) == _MAX_METADATA:
                continue
            value = os.getxattr(where, attribute, follow_symlinks=False)
            size += len(attribute) + len(value)
            if size > _MAX_METADATA_BYTES:
                break
            found[attribute[len(METADATA_PREFIX) :]] = value.decode("ascii", "replace")
    except OSError:  # no xattrs here, or it changed meanwhile
        return found
    return found


def _target_kind(root: Path, target: str) -> fs.FileType:
    """The kind of what a link in the home points at, reached safely, or SYMLINK."""
    try:
        relpath = relpath_of(target)
        if not relpath:
            return fs.FILE_TYPE_DIRECTORY
        info = lstat_path(root, relpath)
    except (E2BError, FileOpError, LMCError, OSError):
        return fs.FILE_TYPE_SYMLINK
    kind = _kind(info.st_mode)
    return kind if kind != fs.FILE_TYPE_UNSPECIFIED else fs.FILE_TYPE_SYMLINK


def entry_of(
    relpath: str,
    info: os.stat_result,
    owner: tuple[int, int] | None,
    link: str | None = None,
    metadata: dict[str, str] | None = None,
    root: Path | None = None,
) -> fs.EntryInfo:
    """The ``EntryInfo`` of ``relpath`` (relative to the home) whose ``lstat`` is
    ``info``; ``link``: a symbolic link's text (its target's kind is looked up
    in ``root``, the home, when given)."""
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
    if metadata:
        entry.metadata.update(metadata)
    if stat.S_ISLNK(info.st_mode) and link is not None:
        entry.is_symlink = True
        target = posixpath.normpath(posixpath.join(posixpath.dirname(where), _shown(link)))
        entry.symlink_target = target
        if root is not None:
            entry.type = _target_kind(root, target)
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
            return entry_of("", os.fstat(fd), owner, metadata=metadata_at(fd, None))
        finally:
            os.close(fd)
    parts = safe_parts(relpath)
    fd = walk(root, parts[:-1], relpath)
    try:
        info = lstat_at(fd, parts[-1], relpath)
        link = _read_link(fd, parts[-1], info)
        found = {} if link is not None else metadata_at(fd, parts[-1])
        return entry_of(relpath, info, owner, link, found, root)
    finally:
        os.close(fd)


def list_entries(
    root: Path, relpath: str, depth: int, owner: tuple[int, int] | None
) -> list[fs.EntryInfo]:
    """The entries of the folder ``relpath``, and of its folders down to ``depth``
    levels (1: its own entries), in the order of a walk by name; links are listed,
    never entered. More than :data:`MAX_ENTRIES` is refused (400)."""
    depth = min(max(depth, 1), MAX_DEPTH)
    fd = walk(root, safe_parts(relpath) if relpath else [], relpath)
    out: list[fs.EntryInfo] = []
    try:
        _list_into(out, fd, relpath, depth, owner, root)
    finally:
        os.close(fd)
    return out


def _too_many(relpath: str) -> E2BError:
    return E2BError(
        f"the listing of {inside(relpath)} has more than {MAX_ENTRIES} entries; "
        "list a smaller depth or a folder below it",
        400,
    )


def _list_into(
    out: list[fs.EntryInfo],
    fd: int,
    relpath: str,
    depth: int,
    owner: tuple[int, int] | None,
    root: Path,
) -> None:
    names: list[str] = []
    with os.scandir(fd) as scan:
        for entry in scan:  # a folder of millions is never read whole
            if len(out) + len(names) == MAX_ENTRIES:
                raise _too_many(relpath)
            names.append(entry.name)
    for name in sorted(names):
        path = f"{relpath}/{name}" if relpath else name
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:  # removed since it was read
            continue
        if len(out) == MAX_ENTRIES:
            raise _too_many(relpath)
        link = _read_link(fd, name, info)
        found = {} if link is not None else metadata_at(fd, name)
        out.append(entry_of(path, info, owner, link, found, root))
        if depth > 1 and stat.S_ISDIR(info.st_mode):
            try:
                child = open_dir(fd, name, path)
            except (NoSuchFile, NotADirectory, Refused):
                continue  # gone, or swapped for a file or a link since
            try:
                _list_into(out, child, path, depth - 1, owner, root)
            finally:
                os.close(child)
