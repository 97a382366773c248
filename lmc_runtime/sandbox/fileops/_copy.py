"""Copying a whole folder tree from the host, safe against the session's code.

Used for a checkpoint's copy of the working directory and for a fork's: the
source or the destination (or both) may be a folder the code can write, so every
step is taken relative to a held descriptor, opened with ``O_NOFOLLOW``, and
created with ``O_EXCL``. Only regular files and folders are copied; a link, FIFO,
socket or device is left out and counted (:attr:`Copied.skipped`). The copy has a
byte budget: past it, ``OSError(ENOSPC)`` (the session's disk is full).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..files import DIR_FLAGS
from ._ops import MAX_ENTRIES, MAX_TREE_DEPTH, _empty_tree
from ._walk import Owner
from .errors import Refused

__all__ = ["Copied", "copy_tree", "empty_tree"]

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20
#: The most one copy_file_range call copies.
_BIG = 1 << 30


@dataclass
class Copied:
    """What a copy took: ``bytes`` of file data, ``entries`` made, ``skipped``
    (links, FIFOs, sockets and devices left out, and entries that vanished)."""

    bytes: int = 0
    entries: int = 0
    skipped: int = 0


def copy_tree(
    source: Path, destination: Path, *, budget: int | None, owner: Owner | None = None
) -> Copied:
    """Copy what is in folder ``source`` into the existing folder ``destination``
    (new entries owned by ``owner`` when given); at most ``budget`` bytes (None: no cap)."""
    src = os.open(source, DIR_FLAGS)
    try:
        dst = os.open(destination, DIR_FLAGS)
        try:
            copied = Copied()
            _copy_dir(src, dst, owner, budget, copied, MAX_TREE_DEPTH)
            return copied
        finally:
            os.close(dst)
    finally:
        os.close(src)


def empty_tree(folder: Path) -> None:
    """Remove everything in ``folder`` (kept itself), never following a link."""
    fd = os.open(folder, DIR_FLAGS)
    try:
        _empty_tree(fd, folder.name, MAX_TREE_DEPTH)
    finally:
        os.close(fd)


def _copy_dir(
    src: int, dst: int, owner: Owner | None, budget: int | None, copied: Copied, depth: int
) -> None:
    if depth == 0:
        raise Refused("", f"holds folders more than {MAX_TREE_DEPTH} levels deep")
    with os.scandir(src) as scan:
        names = [entry.name for entry in scan]
    for name in names:
        copied.entries += 1
        if copied.entries > MAX_ENTRIES * 10:
            raise Refused("", "holds too many entries to copy")
        try:
            info = os.stat(name, dir_fd=src, follow_symlinks=False)
        except FileNotFoundError:
            copied.skipped += 1
            continue
        if stat.S_ISDIR(info.st_mode):
            _copy_subdir(src, dst, name, owner, budget, copied, depth)
        elif stat.S_ISREG(info.st_mode):
            _copy_file(src, dst, name, owner, budget, copied)
        else:
            copied.skipped += 1


def _copy_subdir(
    src: int,
    dst: int,
    name: str,
    owner: Owner | None,
    budget: int | None,
    copied: Copied,
    depth: int,
) -> None:
    try:
        child = os.open(name, DIR_FLAGS, dir_fd=src)
    except OSError:  # gone, or swapped for something else since
        copied.skipped += 1
        return
    try:
        os.mkdir(name, 0o755, dir_fd=dst)
        made = os.open(name, DIR_FLAGS, dir_fd=dst)
        try:
            if owner is not None:
                os.fchown(made, *owner)
            _copy_dir(child, made, owner, budget, copied, depth - 1)
        finally:
            os.close(made)
    finally:
        os.close(child)


def _copy_file(
    src: int, dst: int, name: str, owner: Owner | None, budget: int | None, copied: Copied
) -> None:
    try:
        reading = os.open(name, _READ_FLAGS, dir_fd=src)
    except OSError:
        copied.skipped += 1
        return
    try:
        info = os.fstat(reading)
        if not stat.S_ISREG(info.st_mode):  # swapped since the stat
            copied.skipped += 1
            return
        writing = os.open(name, _WRITE_FLAGS, stat.S_IMODE(info.st_mode) & 0o777, dir_fd=dst)
        try:
            if owner is not None:
                os.fchown(writing, *owner)
            _copy_data(reading, writing, budget, copied)
        finally:
            os.close(writing)
    finally:
        os.close(reading)


def _copy_data(reading: int, writing: int, budget: int | None, copied: Copied) -> None:
    """The file's data, in the kernel where it can (``copy_file_range``: no copy
    through this process), else read and written; past ``budget``, ENOSPC."""
    in_kernel = hasattr(os, "copy_file_range")
    while True:
        # One byte past the budget is enough to know it was passed.
        room = _BIG if budget is None else min(_BIG, budget - copied.bytes + 1)
        if in_kernel:
            try:
                count = os.copy_file_range(reading, writing, room)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                    raise
                in_kernel = False
                continue
        else:
            chunk = os.read(reading, min(room, _CHUNK))
            count = len(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(writing, view) :]
        if not count:
            return
        copied.bytes += count
        if budget is not None and copied.bytes > budget:
            raise OSError(errno.ENOSPC, "the session's disk limit is reached")
