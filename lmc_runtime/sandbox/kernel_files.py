"""Reading the kernel's small files (``/proc``, cgroups) cheaply: each run of a
session reads several (its CPU time, its processes, the limits it hit).

- :func:`read_raw`: an open, a read a piece and a close (a Python file object
  adds four more system calls).
- :class:`HeldFiles`: counters read again and again through a descriptor kept
  open: one ``pread`` a read, without the open's path lookup (on the 2-core
  test machine, inside ``lmc serve``, an open of a cgroup file took some
  15 µs, the read about 1 µs).
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

__all__ = ["HeldFiles", "read_raw"]

#: How much of a kernel file one read asks for.
_PIECE = 1 << 16
#: The most a held counter file is read of (they are a few lines).
_COUNTER_BYTES = 4096


def read_raw(path: Path | str) -> bytes:
    """A kernel file's bytes in as few system calls as it takes. OSError as
    ``open`` raises it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        pieces = []
        while piece := os.read(fd, _PIECE):
            pieces.append(piece)
        return b"".join(pieces)
    finally:
        os.close(fd)


class HeldFiles:
    """Counter files read through descriptors kept open until :meth:`close`.

    Only for files whose every read from their start says what they hold now
    (a cgroup's ``cpuacct.usage``, ``memory.events``, ``pids.events``...), not
    for a cgroup v1 ``cgroup.procs``, whose descriptor keeps the list it made
    at its first read. A file that can no longer be read (its cgroup removed)
    is let go, and opened again at the next read. Safe from any thread (the
    E2B metrics read a session's CPU time in a worker thread); once closed, a
    read opens and closes its file as :func:`read_raw` does."""

    def __init__(self) -> None:
        self._fds: dict[Path, int] = {}
        self._lock = threading.Lock()
        self._closed = False

    def read(self, path: Path) -> str | None:
        """The text of ``path`` now; None if it cannot be read."""
        try:
            with self._lock:
                if self._closed:
                    data = read_raw(path)[:_COUNTER_BYTES]
                else:
                    fd = self._fds.get(path)
                    if fd is None:
                        fd = self._fds[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                    data = os.pread(fd, _COUNTER_BYTES, 0)
            return data.decode("ascii").strip()
        except (OSError, UnicodeDecodeError):
            with self._lock:
                self._let_go(path)
            return None

    def close(self) -> None:
        """Close every descriptor held; later reads hold none."""
        with self._lock:
            self._closed = True
            for path in list(self._fds):
                self._let_go(path)

    def _let_go(self, path: Path) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
