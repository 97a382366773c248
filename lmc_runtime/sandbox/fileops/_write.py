"""Writing a file of a session's directory in place, from the host.

What E2B's envd does for an upload: the file at the path is written over (it
keeps its inode, so the code's watches see it written), and made with its
missing folders if it is new. The folder is reached without following links
(:mod:`._walk`), the file is opened relative to it with ``O_NOFOLLOW`` and
``O_NONBLOCK`` (a link, a FIFO or a socket fails the open itself), and only a
regular file with no other hard link is truncated and written. A write that
fails (a limit, the client gone) removes a file it made; one that was there
is left as far as it was written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from ..files import file_kind, safe_parts
from ._walk import Owner, walk
from .errors import IsADirectory, Refused

__all__ = ["InPlaceWrite"]

_OPEN = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class InPlaceWrite:
    """One file written in place: :meth:`open`, :meth:`write` pieces, then
    :meth:`close` (``failed``: remove it if it was made). Blocking: run the
    calls in a worker thread."""

    def __init__(self, root: Path, relpath: str, owner: Owner | None) -> None:
        self.root = root
        self.relpath = relpath
        self.owner = owner
        self.size = 0
        self.made = False
        self._parts = safe_parts(relpath)
        self._dir_fd = -1
        self._fd = -1

    def open(self) -> None:
        """Reach the folder (making the missing ones) and open the file, or
        :class:`Refused` / :class:`IsADirectory` when it cannot be written safely."""
        dir_fd = walk(self.root, self._parts[:-1], self.relpath, create=True, owner=self.owner)
        name = self._parts[-1]
        try:
            try:
                fd = os.open(name, _OPEN | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dir_fd)
                self.made = True
            except FileExistsError:
                fd = os.open(name, _OPEN, dir_fd=dir_fd)
        except OSError as exc:
            os.close(dir_fd)
            raise self._refusal(exc) from exc
        self._dir_fd, self._fd = dir_fd, fd
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Refused(self.relpath, f"is a {file_kind(info.st_mode)}: refused")
            if info.st_nlink > 1:
                raise Refused(self.relpath, "has other hard links: refused")
            if self.owner is not None:
                os.fchown(fd, *self.owner)
            os.set_blocking(fd, True)
            os.ftruncate(fd, 0)
        except BaseException:
            self.close(failed=True)
            raise

    def _refusal(self, exc: OSError) -> Exception:
        if exc.errno == errno.EISDIR:
            return IsADirectory(self.relpath)
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EWOULDBLOCK):
            return Refused(self.relpath, "is a symbolic link, a FIFO or a socket: refused")
        return exc

    def replace_attributes(self, prefix: str, values: dict[str, str]) -> None:
        """Make the file's extended attributes named ``prefix...`` exactly
        ``values`` (each name after the prefix), on the open file itself."""
        if self._fd < 0:
            raise ValueError("the file is not open")
        for name in os.listxattr(self._fd):
            if name.startswith(prefix):
                with contextlib.suppress(OSError):
                    os.removexattr(self._fd, name)
        for key, value in values.items():
            os.setxattr(self._fd, prefix + key, value.encode())

    def write(self, data: bytes) -> None:
        """Append ``data``, all of it."""
        if self._fd < 0:
            raise ValueError("the file is not open")
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self.size += len(data)

    def close(self, *, failed: bool = False) -> None:
        """Close the file; ``failed``: remove it if this write made it. Harmless twice."""
        fd, self._fd = self._fd, -1
        dir_fd, self._dir_fd = self._dir_fd, -1
        try:
            if fd >= 0:
                os.close(fd)
            if failed and self.made and dir_fd >= 0:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._parts[-1], dir_fd=dir_fd)
        finally:
            if dir_fd >= 0:
                os.close(dir_fd)
