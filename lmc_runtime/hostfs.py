"""Host-side access to a folder an interpreter (maybe a hostile one) can write.

A :class:`HostDir` holds the folder open and reaches every entry through that
descriptor: nothing is opened through a link (``O_NOFOLLOW``), a read never
blocks on a FIFO planted in a file's place, and a read is bounded. Unix sockets
an interpreter binds there are *adopted*: renamed (which never follows a link)
into a folder only the host writes, checked to be sockets, and only then
connected to by path.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

import anyio

from .removal import remove_tree

__all__ = ["HostDir", "UnsafeEntry", "remove_tree"]

logger = logging.getLogger(__name__)

_IN_CREATE = 0x100
_IN_MOVED_TO = 0x80
_IN_DELETE = 0x200
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC


class UnsafeEntry(OSError):
    """An entry is not what the host expects (a link, a FIFO, a file for a socket)."""


def _inotify(path: Path) -> int | None:
    """An inotify descriptor watching ``path`` for new entries, or None.

    libc through the process's own symbols: ``ctypes.util.find_library`` runs
    ``ldconfig -p`` and parses its output, each time (a process, and 2 ms of
    the server's time, for every session)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        return None
    fd = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    if fd < 0:
        return None
    watch = libc.inotify_add_watch(fd, os.fsencode(path), _IN_CREATE | _IN_MOVED_TO | _IN_DELETE)
    if watch < 0:
        os.close(fd)
        return None
    return fd


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 65536):
            pass


class HostDir:
    """A folder held open by the host; its entries are never followed."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> HostDir:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        return self._lstat(name) is not None

    def _bound(self, name: str) -> bool:
        info = self._lstat(name)
        return info is not None and not stat.S_ISREG(info.st_mode)

    def remove(self, name: str) -> None:
        """Remove ``name`` (a link is removed itself, never its target)."""
        info = self._lstat(name)
        if info is None:
            return
        if stat.S_ISDIR(info.st_mode):
            raise UnsafeEntry(f"{name} is a folder")
        os.unlink(name, dir_fd=self.fd)

    def read(self, name: str, limit: int) -> bytes:
        """The contents of the regular file ``name``, at most ``limit`` bytes.

        UnsafeEntry if it is a link, a FIFO, a device, a socket, a folder, has
        other names (hard links) or is larger than ``limit``.
        """
        try:
            fd = os.open(
                name,
                os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY,
                dir_fd=self.fd,
            )
        except OSError as exc:
            raise UnsafeEntry(f"{name} cannot be opened safely: {exc}") from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                raise UnsafeEntry(f"{name} is not a plain file")
            if info.st_size > limit:
                raise UnsafeEntry(f"{name} is larger than {limit} bytes")
            chunks, size = [], 0
            while size <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if size > limit:
                raise UnsafeEntry(f"{name} is larger than {limit} bytes")
            return b"".join(chunks)
        finally:
            os.close(fd)

    def adopt_socket(self, name: str, into: HostDir) -> None:
        """Move the unix socket ``name`` into ``into`` (a folder only the host
        writes) and check it is one; whatever else was there is removed."""
        os.rename(name, name, src_dir_fd=self.fd, dst_dir_fd=into.fd)
        info = into._lstat(name)
        if info is None or not stat.S_ISSOCK(info.st_mode):
            with contextlib.suppress(OSError):
                into.remove(name)
            raise UnsafeEntry(f"{name} is not a unix socket")

    def reserve(self, name: str) -> None:
        """Hold the entry ``name`` with an empty file (created, never opened
        through a link), so that an interpreter that replaces it (``zmq`` unlinks
        a stale socket path before it binds) finds an inode free even when the
        code has filled the disk. Best effort: a full disk just leaves it out."""
        with contextlib.suppress(OSError):
            fd = os.open(
                name,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
                dir_fd=self.fd,
            )
            os.close(fd)

    async def wait_for(self, names: Iterable[str], timeout: float) -> None:
        """Return once every entry in ``names`` exists; TimeoutError after ``timeout``.

        An entry counts once it is no longer a plain file (see :meth:`reserve`).
        Woken by inotify as entries appear (no polling); where inotify is
        missing, it looks again with a growing delay.
        """
        wanted = set(names)
        notify = _inotify(self.path)
        delay = 0.005
        try:
            with anyio.fail_after(timeout):
                while True:
                    wanted = {name for name in wanted if not self._bound(name)}
                    if not wanted:
                        return
                    if notify is not None:
                        await anyio.wait_readable(notify)
                        _drain(notify)
                    else:
                        await anyio.sleep(delay)
                        delay = min(delay * 2, 0.25)
        finally:
            if notify is not None:
                # Closing an inotify descriptor waits for an RCU grace period
                # (some 10 ms): in a worker thread, not in the event loop.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(os.close, notify)
