"""Reaching a folder of a session's directory from the host, one component at a
time, without following anything the session's code planted.

Every component is opened relative to the descriptor of the one before, with
``O_NOFOLLOW | O_DIRECTORY``: a symbolic link, a FIFO, a socket or a device on
the way fails the open itself (no check-then-use window), and only then is the
culprit looked at (``lstat`` relative to the same descriptor) to say what it was.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..files import DIR_FLAGS, descend, file_kind
from .errors import NoSuchFile, NotADirectory, Refused

__all__ = ["FileInfo", "Owner", "kind_of", "lstat_at", "open_dir", "refuse_special", "walk"]

#: (uid, gid) of the session's host user, who must own what the host creates.
Owner = tuple[int, int]


def kind_of(mode: int) -> str:
    """``file``, ``directory``, ``symlink`` or ``other`` (FIFOs, sockets, devices)."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


@dataclass(frozen=True)
class FileInfo:
    """One entry of a session's directory, as ``lstat`` saw it (never followed)."""

    path: str
    name: str
    kind: str
    size: int
    mtime: float

    @classmethod
    def of(cls, path: str, info: os.stat_result) -> FileInfo:
        """The entry at ``path`` (relative to the working directory) whose stat is ``info``."""
        return cls(
            path=path,
            name=path.rsplit("/", 1)[-1],
            kind=kind_of(info.st_mode),
            size=info.st_size,
            mtime=info.st_mtime,
        )


def lstat_at(dir_fd: int, name: str, relpath: str) -> os.stat_result:
    """``name`` in ``dir_fd``, not followed; :class:`NoSuchFile` if missing."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise NoSuchFile(relpath) from None


def refuse_special(info: os.stat_result, relpath: str) -> None:
    """:class:`Refused` unless ``info`` is a regular file or a folder."""
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise Refused(relpath, f"is a {file_kind(info.st_mode)}: refused")


def _refusal(dir_fd: int, name: str, relpath: str, exc: OSError) -> Exception:
    """Why ``name`` in ``dir_fd`` could not be opened as a folder, given ``exc``."""
    if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
        return exc
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return NoSuchFile(relpath)
    except OSError:
        return exc
    if stat.S_ISREG(info.st_mode):
        return NotADirectory(relpath)
    if stat.S_ISDIR(info.st_mode):  # swapped back in since: still refused, said as it was
        return Refused(relpath, "changed while it was opened: refused")
    return Refused(relpath, f"goes through a {file_kind(info.st_mode)}: refused")


def open_dir(dir_fd: int, name: str, relpath: str) -> int:
    """A descriptor of the folder ``name`` in ``dir_fd``, never through a link."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _refusal(dir_fd, name, relpath, exc) from exc


def _step(dir_fd: int, name: str, relpath: str, owner: Owner | None, create: bool) -> int:
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=dir_fd)
        except FileExistsError:
            pass
        else:
            fd = open_dir(dir_fd, name, relpath)
            if owner is not None:
                os.fchown(fd, *owner)
            return fd
    return open_dir(dir_fd, name, relpath)


def walk(
    root: Path,
    parts: list[str],
    relpath: str,
    *,
    create: bool = False,
    owner: Owner | None = None,
) -> int:
    """A descriptor of the folder ``root/parts...``; missing folders are made when
    ``create`` is set (owned by ``owner`` when given). The caller closes it."""
    return descend(root, parts, lambda fd, part: _step(fd, part, relpath, owner, create))
