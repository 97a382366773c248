"""envd's watches of a folder in the sandbox's home: the stream ``WatchDir`` and
the polled ``CreateWatcher`` / ``GetWatcherEvents`` / ``RemoveWatcher``.

A watch is an inotify instance. Each folder is reached as every files
operation reaches it (:mod:`lmc_runtime.sandbox.fileops`: from the home's
descriptor, never through a link), and the watch is put on that very folder
through ``/proc/self/fd/<its descriptor>``: a link or a folder swapped in by
the sandbox's code is never what is watched. With ``recursive``, the folders
below are watched too (at most :data:`MAX_FOLDERS`, each reached the same way,
new ones as they appear).

Events as envd tells them: a name relative to the watched folder, and
CREATE (made, or moved in), WRITE, REMOVE, RENAME (moved away) or CHMOD.
A sandbox has at most :data:`MAX_WATCHES` watches at once, and the server
:data:`MAX_SERVER_WATCHES` (inotify instances are counted per user on the
whole host: 128 by default); they all end with their sandbox.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import secrets
import threading
from pathlib import Path

import anyio

from ...sandbox.fileops import NoSuchFile, NotADirectory, Refused
from ...sandbox.fileops._walk import open_dir, walk
from ...sandbox.files import safe_parts
from ..door import Door
from ..errors import E2BError
from ..registry import E2BSandbox
from . import inotify as ino
from .entries import entry_at
from .inotify import WatchCount
from .paths import inside
from .proto import filesystem_pb2 as fs

__all__ = [
    "MAX_FOLDERS",
    "MAX_SERVER_WATCHES",
    "MAX_WATCHES",
    "Watch",
    "room_for_one",
    "server_count",
    "watches_of",
]

logger = logging.getLogger(__name__)

#: The most watches a sandbox has at once, and folders one recursive watch covers.
MAX_WATCHES = 8
MAX_SERVER_WATCHES = 32
MAX_FOLDERS = 1024
#: The most events one read returns (the rest wait for the next), and entries a
#: new folder's scan tells.
MAX_EVENTS = 10_000

_LAYER = "envd.watches"


class Watch:
    """One watch of the folder ``relpath`` of ``root`` (the home). Blocking
    methods: call them in a worker thread."""

    def __init__(
        self,
        root: Path,
        relpath: str,
        *,
        recursive: bool,
        include_entry: bool,
        owner: tuple[int, int] | None,
        count: WatchCount,
    ) -> None:
        """``count``: the server's count of watches, which this one joins."""
        self.id = secrets.token_hex(8)
        self.count = count
        self.root = root
        self.relpath = relpath
        self.recursive = recursive
        self.include_entry = include_entry
        self.owner = owner
        self.fd = -1
        #: inotify's watch descriptors and the folders they are, relative to ``relpath``.
        self._folders: dict[int, str] = {}
        self._lock = threading.Lock()
        self.ended = False
        #: Set when the sandbox ends: a streamed watch's stream then ends and
        #: closes it.
        self.stopped = anyio.Event()
        self.streamed = False

    def open(self) -> None:
        """Start watching; :class:`NoSuchFile`, :class:`NotADirectory` or a
        refusal when the folder cannot be reached safely."""
        fd = walk(self.root, safe_parts(self.relpath) if self.relpath else [], self.relpath)
        try:
            self.count.take()
            inotify = ino.inotify_init(os.O_NONBLOCK | os.O_CLOEXEC)
            if inotify < 0:
                err = ctypes.get_errno()
                self.count.give_back()
                raise E2BError(f"no watch can be made now: {os.strerror(err)}", 429)
            self.fd = inotify
            self._add(fd, "")
            if self.recursive:
                self._add_below(fd, "")
        except BaseException:
            self.close()
            raise
        finally:
            os.close(fd)

    def _add(self, dir_fd: int, sub: str) -> None:
        if len(self._folders) >= MAX_FOLDERS:
            logger.info("envd watch: more than %d folders; the rest are not watched", MAX_FOLDERS)
            return
        wd = ino.inotify_add_watch(self.fd, f"/proc/self/fd/{dir_fd}".encode(), ino.MASK)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOSPC, errno.ENOMEM):
                raise E2BError("the server watches as many folders as it can", 429)
            raise OSError(err, os.strerror(err))
        self._folders[wd] = sub

    def _add_below(
        self, dir_fd: int, sub: str, found: list[tuple[str, bool]] | None = None
    ) -> None:
        """Watch the folders in ``dir_fd`` (the folder ``sub``) and below; with
        ``found``, note every entry met there (its path, and whether it is a file
        with content)."""
        entries: list[tuple[str, bool, bool]] = []
        with os.scandir(dir_fd) as scan:
            for entry in scan:  # a folder of millions is looked at in part
                if len(entries) == MAX_EVENTS:
                    break
                kind = (entry.is_dir(follow_symlinks=False), entry.is_file(follow_symlinks=False))
                entries.append((entry.name, *kind))
        for name, is_dir, is_file in sorted(entries):
            if len(self._folders) >= MAX_FOLDERS or (
                found is not None and len(found) >= MAX_EVENTS
            ):
                return
            path = f"{sub}/{name}" if sub else name
            if found is not None:
                filled = is_file and os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size > 0
                found.append((path, filled))
            if not is_dir:
                continue
            try:
                child = open_dir(dir_fd, name, path)
            except (NoSuchFile, NotADirectory, Refused):
                continue  # gone, or swapped for a link: not watched
            try:
                self._add(child, path)
                self._add_below(child, path, found)
            finally:
                os.close(child)

    def _add_new(self, sub: str, out: list[fs.FilesystemEvent]) -> None:
        """Watch the folder ``sub`` that just appeared, and what it holds already:
        what was made there before its watch began is told as made (and written,
        for a file with content), as a watch that saw it would have."""
        relpath = f"{self.relpath}/{sub}" if self.relpath else sub
        try:
            fd = walk(self.root, safe_parts(relpath), relpath)
        except (NoSuchFile, NotADirectory, Refused):
            return
        found: list[tuple[str, bool]] = []
        try:
            self._add(fd, sub)
            self._add_below(fd, sub, found)
        except FileNotFoundError:
            pass  # an entry went meanwhile: what was found is told
        finally:
            os.close(fd)
        for path, filled in found:
            out.append(self._event(path, fs.EVENT_TYPE_CREATE))
            if filled:
                out.append(self._event(path, fs.EVENT_TYPE_WRITE))

    def read(self) -> list[fs.FilesystemEvent]:
        """The events since the last read (none if there are none yet)."""
        with self._lock:
            return self._read()

    def _read(self) -> list[fs.FilesystemEvent]:
        if self.fd < 0:
            return []
        out: list[fs.FilesystemEvent] = []
        while len(out) < MAX_EVENTS:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return out
            offset = 0
            while offset + ino.EVENT.size <= len(data):
                wd, mask, _cookie, size = ino.EVENT.unpack_from(data, offset)
                raw = data[offset + ino.EVENT.size : offset + ino.EVENT.size + size]
                offset += ino.EVENT.size + size
                self._one(out, wd, mask, raw.rstrip(b"\0"))
        return out

    def _one(self, out: list[fs.FilesystemEvent], wd: int, mask: int, raw: bytes) -> None:
        if mask & ino.IN_Q_OVERFLOW:
            logger.info("envd watch: events were lost (the queue overflowed)")
            return
        sub = self._folders.get(wd)
        if mask & ino.IN_IGNORED:
            self._folders.pop(wd, None)
        if sub is None:
            return
        if mask & (ino.IN_DELETE_SELF | ino.IN_MOVE_SELF):
            if sub == "":
                self.ended = True  # the watched folder itself is gone
            return
        if not raw:
            return
        name = os.fsdecode(raw)
        path = f"{sub}/{name}" if sub else name
        for bits, kind in ino.KINDS:
            if mask & bits:
                out.append(self._event(path, kind))
        if self.recursive and mask & ino.IN_ISDIR and mask & (ino.IN_CREATE | ino.IN_MOVED_TO):
            self._add_new(path, out)

    def _event(self, path: str, kind: fs.EventType) -> fs.FilesystemEvent:
        shown = path.encode(errors="surrogateescape").decode(errors="replace")
        event = fs.FilesystemEvent(name=shown, type=kind)
        if self.include_entry and kind not in (fs.EVENT_TYPE_REMOVE, fs.EVENT_TYPE_RENAME):
            relpath = f"{self.relpath}/{path}" if self.relpath else path
            try:
                event.entry.CopyFrom(entry_at(self.root, relpath, self.owner))
            except (OSError, NoSuchFile, NotADirectory, Refused, ValueError):
                event.ClearField("entry")  # gone since: told without it
        return event

    def close(self) -> None:
        """Stop watching; harmless twice."""
        with self._lock:
            fd, self.fd = self.fd, -1
            self.ended = True
        if fd >= 0:
            os.close(fd)
            self.count.give_back()

    @property
    def where(self) -> str:
        return inside(self.relpath)


def watches_of(sandbox: E2BSandbox) -> dict[str, Watch]:
    """The watches of ``sandbox`` by id (the polled ones and the streamed ones);
    they are all closed when it ends."""
    watches = sandbox.layers.get(_LAYER)
    if watches is None:
        watches = sandbox.layers[_LAYER] = {}

        async def close_all() -> None:
            for watch in list(watches.values()):
                watch.stopped.set()
                if not watch.streamed:
                    await anyio.to_thread.run_sync(watch.close)
            watches.clear()

        sandbox.closers.append(close_all)
    assert isinstance(watches, dict)
    return watches


def server_count(door: Door) -> WatchCount:
    """The count of ``door``'s watches (at most :data:`MAX_SERVER_WATCHES`)."""
    count = door.layers.setdefault(_LAYER, WatchCount(MAX_SERVER_WATCHES))
    assert isinstance(count, WatchCount)
    return count


def room_for_one(sandbox: E2BSandbox) -> dict[str, Watch]:
    """The watches of ``sandbox``, if it may have one more (429 otherwise)."""
    watches = watches_of(sandbox)
    if len(watches) >= MAX_WATCHES:
        raise E2BError(
            f"this sandbox has {MAX_WATCHES} watches already, the most it may have; stop one first",
            429,
        )
    return watches
