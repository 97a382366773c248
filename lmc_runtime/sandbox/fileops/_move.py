"""Moving a file or folder within a session's directory, from the host.

Both parents are reached without following links (see :mod:`._walk`) and the
rename is relative to their descriptors: ``rename`` never follows a link at
either end, so whatever the session's code swaps in meanwhile, what moves is an
entry of its own directory to another place in it. Without ``overwrite`` the
rename is ``renameat2(RENAME_NOREPLACE)``, which refuses an existing destination
atomically; where the C library or the file system lacks it, the destination is
checked just before a plain rename, whose only race is with the session's own
code replacing a file of its own.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path

from ..files import safe_parts
from ._walk import FileInfo, Owner, lstat_at, refuse_special, walk
from .errors import (
    AlreadyExists,
    BadDestination,
    IsADirectory,
    NoSuchFile,
    NotADirectory,
    NotEmpty,
)

__all__ = ["move"]

_RENAME_NOREPLACE = 1
_RenameAt2 = Callable[[int, bytes, int, bytes, int], int]


@functools.cache
def _renameat2() -> _RenameAt2 | None:
    """The C library's ``renameat2``, or None where it has none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    function.argtypes += [ctypes.c_uint]
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]


def _rename_noreplace(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """Rename unless ``dst`` exists (:class:`FileExistsError` then), atomically where possible."""
    function = _renameat2()
    if function is not None:
        result = function(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), _RENAME_NOREPLACE)
        if result == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(code, os.strerror(code), dst)
    try:
        os.stat(dst, dir_fd=dst_fd, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return
    raise FileExistsError(errno.EEXIST, "exists", dst)


def _check_destination(dst_fd: int, name: str, destination: str, source_is_dir: bool) -> None:
    """Refuse an existing ``destination`` the source cannot replace."""
    try:
        info = os.stat(name, dir_fd=dst_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    refuse_special(info, destination)
    if stat.S_ISDIR(info.st_mode) and not source_is_dir:
        raise IsADirectory(destination)
    if not stat.S_ISDIR(info.st_mode) and source_is_dir:
        raise NotADirectory(destination)


def _refusal(exc: OSError, source: str, destination: str) -> Exception:
    refusals: dict[int, Exception] = {
        errno.EEXIST: AlreadyExists(destination),
        errno.ENOTEMPTY: NotEmpty(destination),
        errno.EISDIR: IsADirectory(destination),
        errno.ENOTDIR: NotADirectory(destination),
        errno.EINVAL: BadDestination(destination, f"cannot move {source!r} into itself"),
    }
    return refusals.get(exc.errno or 0, exc)


def move(
    root: Path, source: str, destination: str, *, overwrite: bool, owner: Owner | None = None
) -> FileInfo:
    """Move ``root/source`` to ``root/destination`` (missing folders on its way are
    made, owned by ``owner``); an existing destination is :class:`AlreadyExists`
    unless ``overwrite``. Links, FIFOs... are refused as the source, as the
    destination and on the way to either."""
    src_parts, dst_parts = safe_parts(source), safe_parts(destination)
    if dst_parts[: len(src_parts)] == src_parts and len(dst_parts) > len(src_parts):
        raise BadDestination(destination, f"cannot move {source!r} into itself")
    src_fd = walk(root, src_parts[:-1], source)
    try:
        info = lstat_at(src_fd, src_parts[-1], source)
        refuse_special(info, source)
        dst_fd = walk(root, dst_parts[:-1], destination, create=True, owner=owner)
        try:
            name = dst_parts[-1]
            try:
                if overwrite:
                    _check_destination(dst_fd, name, destination, stat.S_ISDIR(info.st_mode))
                    os.rename(src_parts[-1], name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                else:
                    _rename_noreplace(src_fd, src_parts[-1], dst_fd, name)
            except OSError as exc:
                raise _refusal(exc, source, destination) from exc
            try:
                return FileInfo.of(destination, lstat_at(dst_fd, name, destination))
            except NoSuchFile:  # moved on by the code at once: what moved
                return FileInfo.of(destination, info)
        finally:
            os.close(dst_fd)
    finally:
        os.close(src_fd)
