"""Empty ext4 images that sessions' disks are copied from (:class:`DiskImages`).

Formatting a session's disk (``mkfs.ext4``) is a process of its own on every
session's start: some 4 to 9 ms before the sandbox can start, and its CPU in
every burst. The filesystem it makes is the same for every disk of one size, so
a server formats one image per size, once, in a folder only the host sees (its
data directory's), and each session's image is a sparse copy of it: only the
blocks the format wrote (some 650 KiB for 1 GiB) are copied. What every disk
holds from its start (``contents``: the host's reserve of inodes) is written
into the image by the format (``mkfs.ext4 -d``), not into each disk.

A server keeps the images of a few sizes only (:data:`SIZES_KEPT`): sessions
may each ask for a size of their own, and an image kept for each would grow the
data directory without bound; a disk of another size is formatted for itself.

The copies share the format's UUID and directory hash seed. The kernel does not
ask them to differ; the image is never in reach of the sandbox (it sees the
mounted filesystem only), and a seed known to one session's code concerns only
its own folders.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import anyio

__all__ = ["SIZES_KEPT", "DiskImages", "format_image", "sparse_copy"]

logger = logging.getLogger(__name__)

#: ``mkfs.ext4``'s options for a session's disk: no journal, no reserved blocks.
_MKFS = ("mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-m", "0")
#: The disk sizes a server keeps an image of (the first asked for).
SIZES_KEPT = 4


async def format_image(image: Path, size: int, contents: Path | None = None) -> None:
    """Create ``image`` (it must not exist) as an ext4 filesystem of ``size`` bytes,
    empty or holding a copy of the folder ``contents``."""
    with open(image, "xb") as file:
        file.truncate(size)
    given = ["-d", str(contents)] if contents is not None else []
    await anyio.run_process([*_MKFS, *given, str(image)], check=True)


def sparse_copy(source: Path, target: Path) -> None:
    """Copy ``source`` to the new file ``target``, its holes left holes. Blocking."""
    src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        size = os.fstat(src).st_size
        dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(dst, size)
            offset = 0
            while offset < size:
                try:
                    data = os.lseek(src, offset, os.SEEK_DATA)
                except OSError:  # ENXIO: nothing but a hole to the end
                    break
                end = os.lseek(src, data, os.SEEK_HOLE)
                while data < end:
                    copied = os.copy_file_range(src, dst, end - data, data, data)
                    if copied <= 0:
                        raise OSError(f"copying {source} stopped at byte {data}")
                    data += copied
                offset = end
        finally:
            os.close(dst)
    finally:
        os.close(src)


class DiskImages:
    """One formatted image per disk size, in ``folder`` (made host-only, emptied
    first: images of an earlier run are not trusted), for the sessions of one
    server; ``contents`` writes what each holds from the start into a folder."""

    def __init__(self, folder: Path, contents: Callable[[Path], None] | None = None) -> None:
        self.folder = folder
        self._contents = contents
        self._made: dict[int, Path] = {}
        self._locks: dict[int, anyio.Lock] = {}
        #: Held while the folder is made: sizes are formatted side by side.
        self._folder_lock = anyio.Lock()
        self._ready = False

    async def prepare(self, size: int | None) -> None:
        """Format the image of ``size`` ahead of the first session that needs it,
        where disks are mounted (as root, with ``mkfs.ext4``); a failure is the
        first session's to meet again."""
        if size is None or os.geteuid() != 0 or shutil.which("mkfs.ext4") is None:
            return
        try:
            await self._image(size)
        except (OSError, subprocess.CalledProcessError) as exc:
            logger.info("the disks' image of %d bytes could not be made: %s", size, exc)

    async def copy(self, size: int, target: Path) -> None:
        """Make ``target`` (new) an empty ext4 filesystem of ``size`` bytes, a copy
        of this size's image (formatted on first use); past :data:`SIZES_KEPT`
        sizes, formatted for itself (its reserve is the disk's to make)."""
        if size not in self._locks and len(self._locks) >= SIZES_KEPT:
            await format_image(target, size)
            return
        image = await self._image(size)
        await anyio.to_thread.run_sync(sparse_copy, image, target)

    async def _image(self, size: int) -> Path:
        lock = self._locks.setdefault(size, anyio.Lock())
        async with lock:
            made = self._made.get(size)
            if made is None:
                async with self._folder_lock:  # never emptied under another size's format
                    if not self._ready:
                        await anyio.to_thread.run_sync(self._prepare)
                        self._ready = True
                made = self.folder / f"ext4-{size}.img"
                partial = self.folder / f"ext4-{size}.partial"
                staged = self.folder / f"ext4-{size}.contents"
                try:
                    if self._contents is not None:
                        await anyio.to_thread.run_sync(self._stage, staged)
                    await self._format(partial, size, staged if self._contents else None)
                    os.rename(partial, made)
                except BaseException:
                    partial.unlink(missing_ok=True)
                    raise
                finally:  # a cancelled format too: a staged folder left fails the next
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(shutil.rmtree, staged, True)
                self._made[size] = made
            return made

    async def _format(self, image: Path, size: int, contents: Path | None) -> None:
        """Format ``image`` holding ``contents``; empty where ``mkfs.ext4`` has no
        ``-d`` (e2fsprogs before 1.43, BusyBox): the disks then make their reserve."""
        try:
            await format_image(image, size, contents)
        except subprocess.CalledProcessError as exc:
            if contents is None:
                raise
            logger.info("mkfs.ext4 -d failed (%s): the disks' image is formatted empty", exc)
            image.unlink(missing_ok=True)
            await format_image(image, size)

    def _stage(self, staged: Path) -> None:
        assert self._contents is not None
        staged.mkdir(mode=0o700)
        self._contents(staged)

    def _prepare(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True, mode=0o700)

    def close(self) -> None:
        """Remove the images (the sessions' copies are theirs)."""
        self._made.clear()
        if self._ready:
            shutil.rmtree(self.folder, ignore_errors=True)
            self._ready = False
