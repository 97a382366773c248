"""Writing an uploaded file into a session's directory, piece by piece.

The pieces go to a new temporary file next to the target (created with
``O_EXCL | O_NOFOLLOW`` in a folder reached without following links); only a
complete upload is renamed over the target, so a refused or broken upload never
leaves a half-written file, and memory holds one piece at a time. A target that
is a link, a directory, a FIFO, a socket or a device is refused, before and
again just before the rename (which never follows a link either).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from ..errors import UnsafePath
from .files import file_kind, open_parent, safe_parts

__all__ = ["SessionUpload"]

_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class SessionUpload:
    """One upload to ``root/relpath``: :meth:`open`, :meth:`write` pieces, then
    :meth:`commit` or :meth:`abort`. Blocking calls: run them in a worker thread."""

    def __init__(self, root: Path, relpath: str, owner: tuple[int, int] | None = None) -> None:
        """``owner``: the (uid, gid) the file and new folders belong to, so that
        the session's code, running as its own host user, can change them."""
        self.root = root
        self.relpath = relpath
        self.owner = owner
        self.size = 0
        self._name = safe_parts(relpath)[-1]
        self._temp = f".lmc-upload-{secrets.token_hex(8)}"
        self._dir_fd: int | None = None
        self._fd: int | None = None

    def _check_target(self, dir_fd: int) -> None:
        try:
            info = os.stat(self._name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", self.relpath)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath(self.relpath, f"not a regular file but a {file_kind(info.st_mode)}")

    def open(self) -> None:
        """Check the target and create the temporary file (parent folders as needed)."""
        dir_fd = open_parent(self.root, self.relpath, create=True, owner=self.owner)
        try:
            self._check_target(dir_fd)
            self._fd = os.open(self._temp, _TEMP_FLAGS, 0o644, dir_fd=dir_fd)
            if self.owner is not None:
                os.fchown(self._fd, *self.owner)
        except BaseException:
            os.close(dir_fd)
            raise
        self._dir_fd = dir_fd

    def write(self, data: bytes) -> None:
        """Append ``data`` (all of it) to the temporary file."""
        if self._fd is None:
            raise ValueError("the upload is not open")
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self.size += len(data)

    def commit(self) -> None:
        """Put the complete file in place of the target."""
        if self._fd is None or self._dir_fd is None:
            raise ValueError("the upload is not open")
        try:
            os.close(self._fd)
            self._fd = None
            self._check_target(self._dir_fd)
            os.rename(self._temp, self._name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
        except BaseException:
            self.abort()
            raise
        os.close(self._dir_fd)
        self._dir_fd = None

    def abort(self) -> None:
        """Remove the temporary file; harmless after :meth:`commit` or twice."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        dir_fd, self._dir_fd = self._dir_fd, None
        if dir_fd is not None:
            try:
                os.unlink(self._temp, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
            finally:
                os.close(dir_fd)
