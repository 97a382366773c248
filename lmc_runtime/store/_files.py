"""Durable file operations for the folder store: atomic JSON, locked appends with a
bounded wait, tolerant JSON-lines reading."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import StoreError

__all__ = [
    "LockBusy",
    "append_lines",
    "fsync_dir",
    "locked",
    "read_json_lines",
    "write_json_atomic",
    "write_lines",
    "write_lines_now",
]

logger = logging.getLogger(__name__)


class LockBusy(StoreError):
    """Another writer held a lock for longer than the wait allowed."""


def fsync_dir(path: Path) -> None:
    """Make the entries of the folder ``path`` (new names, renames) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        payload = json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, it still round-trips
        payload = json.dumps(data, indent=2).encode("ascii")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class _Waiter:
    """Takes an exclusive ``flock`` on ``fd`` in a helper thread, so the caller can give up.

    The helper works on a duplicate of ``fd`` (the same open file, so the same
    lock). A caller that gives up closes its own descriptor as usual; the helper
    closes the duplicate once its ``flock`` returns, and with the last descriptor
    of that open file closed, the kernel drops the lock again.
    """

    def __init__(self, fd: int) -> None:
        self._fd = os.dup(fd)
        self._guard = threading.Lock()
        self._done = threading.Event()
        self._abandoned = False
        self._error: OSError | None = None
        threading.Thread(target=self._take, name="store-flock", daemon=True).start()

    def _take(self) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except OSError as exc:
            self._error = exc
        with self._guard:
            self._done.set()
            if self._abandoned:
                os.close(self._fd)

    def wait(self, timeout: float) -> bool:
        """Whether the lock was taken within ``timeout`` seconds."""
        self._done.wait(timeout)
        with self._guard:
            if not self._done.is_set():
                self._abandoned = True
                return False
        os.close(self._fd)
        if self._error is not None:
            raise self._error
        return True


@contextlib.contextmanager
def locked(fd: int, timeout: float, what: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``fd``; LockBusy if ``timeout`` seconds pass first."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if timeout <= 0 or not _Waiter(fd).wait(timeout):
            raise LockBusy(
                f"{what} stayed locked by another writer for {timeout:g} seconds"
            ) from None
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def append_lines(path: Path, lines: list[str], timeout: float) -> None:
    """Append whole lines to ``path`` (made if missing), under an exclusive lock, then fsync.

    Waits at most ``timeout`` seconds for the lock, then raises StoreError.

    A torn last line left by a crashed writer is closed with a newline first, so
    it stays one bad line (skipped on load) instead of spoiling the next record.

    All or nothing while the process lives: a write or fsync that fails (a full
    disk, EIO) cuts the file back to its size before, so the lines already
    written are not left behind to be written again by a retry.
    """
    with _appended(path, lines, timeout) as fd:
        os.fsync(fd)


def write_lines(path: Path, lines: list[str], timeout: float) -> int:
    """Append whole lines to ``path`` as :func:`append_lines` does, but without
    the fsync: a new descriptor of the file, which the caller fsyncs and closes.

    The lines are visible to readers, and safe from a crash of this process,
    once this returns; they are on disk once the returned descriptor is fsynced.
    """
    with _appended(path, lines, timeout) as fd:
        return os.dup(fd)


def write_lines_now(path: Path, lines: list[str]) -> int | None:
    """:func:`write_lines` without waiting for the lock: None, with nothing
    written, while another writer holds it."""
    try:
        return write_lines(path, lines, 0)
    except LockBusy:
        return None


@contextlib.contextmanager
def _appended(path: Path, lines: list[str], timeout: float) -> Iterator[int]:
    """The file's descriptor, once ``lines`` are written to its end under its lock;
    the file is cut back to its size before if the block raises OSError."""
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        with locked(fd, timeout, path):
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            try:
                _write_all(fd, data)
                yield fd
            except OSError:
                _cut_back(fd, size, path)
                raise
    finally:
        os.close(fd)


def _cut_back(fd: int, size: int, path: Path) -> None:
    """Truncate ``fd`` to ``size`` after a failed append (shrinking needs no space)."""
    try:
        os.ftruncate(fd, size)
    except OSError:
        logger.exception("%s: could not remove the lines of a failed append", path)


def read_json_lines(path: Path) -> list[Any]:
    """Every JSON line of ``path``; bad lines are skipped with a warning, never fatal."""
    with path.open("rb") as file:
        raw = file.read()
    records = []
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except (ValueError, RecursionError):  # also bad UTF-8, endless digits, deep nesting
            torn = number == len(lines)  # no newline after it: a write cut short
            logger.warning(
                "%s: skipped %s line %d (%d bytes) that is not valid JSON",
                path,
                "the torn last" if torn else "corrupt",
                number,
                len(line),
            )
    return records
