"""Opening a file in a session's directory from the host, safely.

Code in the session can plant links anywhere in its own directory. Every
component is therefore opened relative to the one before (``dir_fd``) with
``O_NOFOLLOW``: a link anywhere on the path is refused, never followed. ``..``,
absolute paths and empty components are refused before anything is opened.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ..errors import UnsafePath

__all__ = ["DIR_FLAGS", "descend", "file_kind", "open_in_session", "open_parent", "safe_parts"]

_MODES = {
    "rb": os.O_RDONLY,
    "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "ab": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "xb": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}
#: How every folder on a path is opened: never through a link, never blocking.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


#: The most components a path given to the files API may have.
MAX_DEPTH = 64
#: The longest name a component may have, in bytes (Linux's ``NAME_MAX``).
NAME_MAX = 255


def safe_parts(relpath: str) -> list[str]:
    """The components of ``relpath``, or :class:`UnsafePath` if it could escape."""
    if not relpath or "\x00" in relpath:
        raise UnsafePath(relpath, "empty path or NUL byte")
    if relpath.startswith(("/", "\\")) or PurePosixPath(relpath).is_absolute():
        raise UnsafePath(relpath, "absolute paths are not allowed")
    parts = relpath.split("/")
    if len(parts) > MAX_DEPTH:
        raise UnsafePath(relpath[:200], f"paths may have at most {MAX_DEPTH} components")
    for part in parts:
        if part in ("", ".", ".."):
            raise UnsafePath(relpath, f"path component {part!r} is not allowed")
        if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX:
            raise UnsafePath(relpath[:200], f"a path component is longer than {NAME_MAX} bytes")
    return parts


def _refused(relpath: str, exc: OSError) -> UnsafePath:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return UnsafePath(relpath, "a component is a symbolic link or not a directory")
    if exc.errno == errno.ENXIO:  # a FIFO with no reader, a socket
        return UnsafePath(relpath, "not a regular file but a FIFO or socket")
    raise exc


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words."""
    kinds = (
        (stat.S_ISREG, "regular file"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISLNK, "symbolic link"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    )
    return next((name for test, name in kinds if test(mode)), "special file")


def descend(root: Path, parts: Iterable[str], step: Callable[[int, str], int]) -> int:
    """A descriptor of the folder ``root/parts...``, reached one part at a time:
    ``root`` is opened with :data:`DIR_FLAGS`, then each part by ``step(dir_fd,
    part)``, which opens it relative to ``dir_fd`` (the folder before) with
    :data:`DIR_FLAGS` too, so never through a link. Each descriptor is closed
    once the next is open, and on any error. The caller closes the last."""
    fd = os.open(root, DIR_FLAGS)
    try:
        for part in parts:
            next_fd = step(fd, part)
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_or_make(
    dir_fd: int, part: str, relpath: str, create: bool, owner: tuple[int, int] | None
) -> int:
    """The folder ``part`` in ``dir_fd``, made first if it is missing and ``create``
    is set (owned by ``owner`` when given)."""
    try:
        return os.open(part, DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
        os.mkdir(part, 0o755, dir_fd=dir_fd)
        fd = os.open(part, DIR_FLAGS, dir_fd=dir_fd)
        if owner is not None:
            os.fchown(fd, *owner)
        return fd
    except OSError as exc:
        raise _refused(relpath, exc) from exc


def open_parent(
    root: Path, relpath: str, *, create: bool = False, owner: tuple[int, int] | None = None
) -> int:
    """A descriptor of the folder holding ``relpath``'s last component, reached
    one component at a time without following links (missing folders are made
    when ``create`` is set, owned by ``owner`` (uid, gid) when given: the
    session's host user). The caller closes it."""
    parts = safe_parts(relpath)
    return descend(
        root, parts[:-1], lambda fd, part: _open_or_make(fd, part, relpath, create, owner)
    )


def open_in_session(
    root: Path, relpath: str, mode: str = "rb", *, make_parents: bool = False
) -> IO[Any]:
    """Open ``root/relpath`` in binary ``mode`` (rb, wb, ab, xb) without following links.

    Writes create missing parent directories when ``make_parents`` is set.
    Raises :class:`UnsafePath` for ``..``, absolute paths, links and non-regular
    files; other OS errors (a missing file) propagate as ``OSError``.
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}, got {mode!r}")
    parts = safe_parts(relpath)
    fd = open_parent(root, relpath, create=mode != "rb" and make_parents)
    try:
        flags = (_MODES[mode] & ~os.O_TRUNC) | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            file_fd = os.open(parts[-1], flags, 0o644, dir_fd=fd)
        except OSError as exc:
            raise _refused(relpath, exc) from exc
    finally:
        os.close(fd)
    try:
        info = os.fstat(file_fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath(relpath, f"not a regular file but a {file_kind(info.st_mode)}")
        if info.st_nlink > 1:
            raise UnsafePath(relpath, "the file has other hard links")
        os.set_blocking(file_fd, True)
        if mode == "wb":  # truncated only once it is known to be safe
            os.ftruncate(file_fd, 0)
    except BaseException:
        os.close(file_fd)
        raise
    return os.fdopen(file_fd, mode)
