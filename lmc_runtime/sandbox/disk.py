"""A session's disk and its limit.

Everything a session's code can write lives on one disk: the folder ``path``
holds the code's working directory, the folder its interpreters share
(sockets, screenshots) and the host's spill files of truncated outputs. So the
limit counts them together.

As root, ``path`` is a filesystem of its own: a sparse ext4 image of
``disk_bytes``, loop-mounted by the host (``nosuid,nodev``). The kernel refuses
writes past it (``ENOSPC``), the host's spill files included, and the host
still reads and writes the files there directly (uploads, downloads).

Where mounting is not allowed ``path`` is a plain folder, and its use is
measured (after each execution) and reported, but not enforced. The
measurement walks a tree the code fills, so it runs in a worker thread, never
on the event loop, and it stops after :data:`SCAN_ENTRIES` entries: a tree
that large counts as over the limit.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import anyio

from .disk_images import DiskImages, format_image
from .files import DIR_FLAGS
from .loopmount import mount_image, unmount

__all__ = ["SCAN_DEPTH", "SCAN_ENTRIES", "Scan", "WorkDisk", "tree_bytes"]

logger = logging.getLogger(__name__)

#: Free space below which a session's disk counts as full.
_FULL_MARGIN = 1 << 20

#: The most entries one measurement of an unmounted disk visits.
SCAN_ENTRIES = 100_000
#: The deepest folder one measurement enters (it holds a descriptor per level).
SCAN_DEPTH = 1_000
#: Free inodes below which a session's disk counts as full: room for the
#: host's own files of the next executions (cells, pages, connection files).
_INODE_MARGIN = 64


@dataclass(frozen=True)
class Scan:
    """One measurement of a tree: bytes on disk, entries seen, and whether the
    walk stopped at its bound before seeing everything."""

    bytes: int
    entries: int
    truncated: bool = False


def tree_bytes(root: Path, max_entries: int = SCAN_ENTRIES) -> Scan:
    """Disk blocks used under ``root``, visiting at most ``max_entries`` entries
    and folders at most :data:`SCAN_DEPTH` deep. Blocking: call it from a worker
    thread.

    The walk never follows a link: each folder is opened through its parent's
    descriptor with ``O_NOFOLLOW``, so a folder the code swaps for a link
    between its listing and its visit is not entered (by its path, it would
    lead anywhere on the host). It holds one descriptor per level it is in.
    """
    try:
        top = os.open(root, DIR_FLAGS)
    except OSError:
        return Scan(0, 0)
    total = entries = 0
    # Each level: its folder's descriptor and the names of its folders not yet visited.
    stack: list[tuple[int, list[str]]] = [(top, [])]
    try:
        folders = _list(top)
        while True:
            if folders is not None:
                names, level_bytes, count = folders
                total, entries = total + level_bytes, entries + count
                if entries > max_entries:
                    return Scan(total, max_entries, truncated=True)
                stack[-1][1].extend(names)
            fd, pending = stack[-1]
            if not pending:
                os.close(stack.pop()[0])
                if not stack:
                    return Scan(total, entries)
                folders = None
                continue
            if len(stack) >= SCAN_DEPTH:
                return Scan(total, entries, truncated=True)
            try:
                child = os.open(pending.pop(), DIR_FLAGS, dir_fd=fd)
            except OSError:  # gone, or swapped for a link or a file since
                folders = None
                continue
            stack.append((child, []))
            folders = _list(child)
    finally:
        for fd, _ in stack:
            os.close(fd)


def _list(fd: int) -> tuple[list[str], int, int] | None:
    """The folders in the folder ``fd``, the bytes its entries take, and how many
    entries it holds (None: it cannot be read)."""
    names: list[str] = []
    total = count = 0
    try:
        with os.scandir(fd) as listing:
            for entry in listing:
                count += 1
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += info.st_blocks * 512
                if stat.S_ISDIR(info.st_mode):
                    names.append(entry.name)
    except OSError:
        return None
    return names, total, count


class WorkDisk:
    """The session's disk ``path`` with at most ``limit`` bytes on it; ``image``
    is where its filesystem image goes when it can be mounted (a copy of one of
    ``images``, if given; else formatted for it)."""

    def __init__(
        self, path: Path, image: Path, limit: int | None, images: DiskImages | None = None
    ) -> None:
        self.path = path
        self.image = image
        self.limit = limit
        self._images = images
        self.mounted = False
        self._baseline = 0
        #: The last measurement of an unmounted disk.
        self._scan = Scan(0, 0)
        #: The reserve holds all its inodes (see :meth:`keep_reserve`).
        self._reserve_kept = False
        #: Whether mount(8) ran: the image may be mounted though :attr:`mounted` is unset.
        self._mount_tried = False

    @property
    def mechanism(self) -> str:
        if self.limit is None:
            return "none"
        if self.mounted:
            return "ext4 image mounted on the session's disk"
        return f"measured after each execution (at most {SCAN_ENTRIES} entries)"

    async def setup(self) -> None:
        """Create the folder; mount a filesystem of ``limit`` bytes on it if allowed."""
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.limit is None or os.geteuid() != 0 or shutil.which("mkfs.ext4") is None:
            return
        try:
            if self._images is not None:
                await self._images.copy(self.limit, self.image)
            else:
                await format_image(self.image, self.limit)
            # A cancelled start (a shutdown cancels the sessions still starting)
            # may come once the kernel mounted the image: teardown looks.
            self._mount_tried = True
            await self._mount()
        except (OSError, subprocess.CalledProcessError) as exc:
            logger.info("the session's disk is not size-limited by a mount: %s", exc)
            self.image.unlink(missing_ok=True)
            return
        self.mounted = True
        (self.path / "lost+found").rmdir()
        self.path.chmod(0o700)
        if self._reserve_complete():  # the image had it (see :meth:`contents`)
            self._reserve_kept = True
        else:
            self.keep_reserve()
        self._baseline = self._used_blocks()

    async def _mount(self) -> None:
        """Mount the image on the disk's folder: in this process, else with mount(8)."""
        try:
            await anyio.to_thread.run_sync(mount_image, self.image, self.path)
        except OSError as exc:
            logger.debug("mounting %s in-process failed (%s): mount(8) tries", self.image, exc)
            await self._run("mount", "-o", "loop,nosuid,nodev", str(self.image), str(self.path))

    async def _run(self, *argv: str) -> None:
        await anyio.run_process(list(argv), check=True)

    def _used_blocks(self) -> int:
        info = os.statvfs(self.path)
        return (info.f_blocks - info.f_bfree) * info.f_frsize

    @property
    def over_scan_bound(self) -> bool:
        """Whether the last measurement stopped at its bound (too many entries)."""
        return self._scan.truncated

    async def measure(self) -> int:
        """Measure the disk now (an unmounted one in a worker thread); its use."""
        if not self.mounted:
            self._scan = await anyio.to_thread.run_sync(tree_bytes, self.path)
        return self.used()

    def used(self) -> int:
        """Bytes the session's disk uses: the filesystem's own figure when mounted,
        else the last measurement (cheap: it never walks the tree)."""
        if self.mounted:
            return max(0, self._used_blocks() - self._baseline)
        return self._scan.bytes

    def room(self) -> int | None:
        """Bytes the host may still write on the disk (None: no limit)."""
        if self.limit is None:
            return None
        if self.mounted:
            try:
                info = os.statvfs(self.path)
            except OSError:
                return 0
            return max(0, info.f_bavail * info.f_frsize - _FULL_MARGIN)
        if self._scan.truncated:
            return 0
        return max(0, self.limit - self._scan.bytes)

    def full(self) -> bool:
        """Whether the disk is at (or past) its limit, as last seen."""
        if self.limit is None:
            return False
        if self.mounted:
            info = os.statvfs(self.path)  # one look at blocks and inodes alike
            return info.f_bavail * info.f_frsize < _FULL_MARGIN or _no_inodes(info)
        return self._scan.truncated or self._scan.bytes >= self.limit

    def inodes_full(self) -> bool:
        """Whether a mounted disk is out of inodes (files and folders), all but
        the margin kept for the host's own files."""
        if self.limit is None or not self.mounted:
            return False
        return _no_inodes(os.statvfs(self.path))

    @property
    def _reserve(self) -> Path:
        """Empty files only the host sees, holding inodes for its own files."""
        return self.path / "reserve"

    @staticmethod
    def contents(folder: Path) -> None:
        """What a disk holds from its start, written into ``folder`` (a disk image's
        contents, see :class:`~.disk_images.DiskImages`): the reserve of inodes."""
        reserve = folder / "reserve"
        reserve.mkdir(mode=0o700)
        for number in range(_INODE_MARGIN):
            (reserve / str(number)).touch(mode=0o600)

    def _reserve_complete(self) -> bool:
        try:
            return len(os.listdir(self._reserve)) == _INODE_MARGIN
        except OSError:
            return False

    def keep_reserve(self) -> None:
        """Give the reserve back its :data:`_INODE_MARGIN` inodes, where there is room."""
        if not self.reserve_missing or os.statvfs(self.path).f_favail < 2 * _INODE_MARGIN:
            return
        try:
            self._reserve.mkdir(mode=0o700, exist_ok=True)
            for number in range(_INODE_MARGIN):
                (self._reserve / str(number)).touch(mode=0o600)
        except OSError as exc:
            logger.debug("the disk's reserve of inodes is not complete: %s", exc)
        else:
            self._reserve_kept = True

    @property
    def reserve_missing(self) -> bool:
        """Whether a mounted disk's reserve lacks inodes (checked without a syscall)."""
        return self.mounted and not self._reserve_kept

    def release_reserve(self) -> None:
        """Free the reserve's inodes when the disk has none left, so the host can
        still make the files an execution needs (the code filled the rest)."""
        if not self.inodes_full():
            return
        logger.info("the session's disk is out of inodes: releasing the host's reserve")
        self._reserve_kept = False
        for number in range(_INODE_MARGIN):
            (self._reserve / str(number)).unlink(missing_ok=True)

    async def teardown(self) -> None:
        """Unmount and delete the image (the disk's files go with it); never cut
        short by a cancellation. What a mount that failed half-way left mounted is
        unmounted too."""
        with anyio.CancelScope(shield=True):
            await self._teardown()

    async def _teardown(self) -> None:
        if self._mount_tried and not self.mounted:
            self.mounted = await anyio.to_thread.run_sync(os.path.ismount, self.path)
            if self.mounted:
                logger.info("%s was mounted though its mount did not finish", self.path)
        self._mount_tried = False
        if self.mounted:
            try:
                await anyio.to_thread.run_sync(unmount, self.path)
            except OSError as exc:
                logger.warning("unmounting %s failed (%s): umount(8) tries", self.path, exc)
                await anyio.run_process(["umount", "-l", str(self.path)], check=False)
            self.mounted = False
        self.image.unlink(missing_ok=True)


def _no_inodes(info: os.statvfs_result) -> bool:
    """Whether ``info``'s filesystem has no inode left but the host's margin."""
    return info.f_files > 0 and info.f_favail < _INODE_MARGIN
