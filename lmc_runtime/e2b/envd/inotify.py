"""Linux's inotify, as envd's watches use it: the event mask, the events'
layout and kinds, and the server's count of instances (:class:`WatchCount`)."""

from __future__ import annotations

import ctypes
import struct
import threading

from ..errors import E2BError
from .proto import filesystem_pb2 as fs

__all__ = [
    "EVENT",
    "IN_CREATE",
    "IN_DELETE_SELF",
    "IN_IGNORED",
    "IN_ISDIR",
    "IN_MOVED_TO",
    "IN_MOVE_SELF",
    "IN_Q_OVERFLOW",
    "KINDS",
    "MASK",
    "WatchCount",
    "inotify_add_watch",
    "inotify_init",
]

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
EVENT = struct.Struct("iIII")
KINDS: tuple[tuple[int, fs.EventType], ...] = (
    (IN_CREATE | IN_MOVED_TO, fs.EVENT_TYPE_CREATE),
    (IN_MODIFY, fs.EVENT_TYPE_WRITE),
    (IN_DELETE, fs.EVENT_TYPE_REMOVE),
    (IN_MOVED_FROM, fs.EVENT_TYPE_RENAME),
    (IN_ATTRIB, fs.EVENT_TYPE_CHMOD),
)
_LIBC = ctypes.CDLL(None, use_errno=True)


def inotify_init(flags: int) -> int:
    """A new inotify instance's descriptor, or -1 (``ctypes.get_errno()`` says why)."""
    return int(_LIBC.inotify_init1(flags))


def inotify_add_watch(fd: int, path: bytes, mask: int) -> int:
    """A watch descriptor of ``path`` in instance ``fd``, or -1."""
    return int(_LIBC.inotify_add_watch(fd, path, mask))


class WatchCount:
    """The inotify instances one server's watches hold, at most ``most`` (they
    are counted per user on the whole host: 128 by default)."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._held = 0
        self._lock = threading.Lock()

    def take(self) -> None:
        """Count one more; a 429 when the server holds ``most`` already."""
        with self._lock:
            if self._held >= self.most:
                raise E2BError(
                    f"the server holds {self.most} watches already, the most it may; "
                    "try again when one has ended",
                    429,
                )
            self._held += 1

    def give_back(self) -> None:
        with self._lock:
            self._held -= 1
