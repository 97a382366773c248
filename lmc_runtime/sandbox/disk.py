"""The working directory's disk limit.

As root, the working directory is a filesystem of its own: a sparse ext4 image
of ``disk_bytes``, loop-mounted by the host at the working directory's path
(``nosuid,nodev``). The kernel refuses writes past it (``ENOSPC``), and the
host still reads and writes the files there directly (uploads, downloads).
Where mounting is not allowed the directory is a plain one, and its use is
measured after each execution and reported, but not enforced.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
from pathlib import Path

import anyio

__all__ = ["WorkDisk", "tree_bytes"]

logger = logging.getLogger(__name__)

#: Free space below which a mounted working directory counts as full.
_FULL_MARGIN = 1 << 20


def tree_bytes(root: Path) -> int:
    """Disk blocks used under ``root``, without following any link."""
    total = 0
    stack = [root]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode):
                stack.append(Path(entry.path))
    return total


class WorkDisk:
    """The working directory ``path`` with at most ``limit`` bytes on disk."""

    def __init__(self, path: Path, image: Path, limit: int | None) -> None:
        self.path = path
        self.image = image
        self.limit = limit
        self.mounted = False
        self._baseline = 0

    @property
    def mechanism(self) -> str:
        if self.limit is None:
            return "none"
        return "ext4 image mounted on the working directory" if self.mounted else "measured"

    async def setup(self) -> None:
        """Create the directory; mount a filesystem of ``limit`` bytes on it if allowed."""
        self.path.mkdir(parents=True, exist_ok=True)
        if self.limit is None or os.geteuid() != 0 or shutil.which("mkfs.ext4") is None:
            return
        try:
            with open(self.image, "xb") as image:
                image.truncate(self.limit)
            await self._run(
                "mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-m", "0", str(self.image)
            )
            await self._run("mount", "-o", "loop,nosuid,nodev", str(self.image), str(self.path))
        except (OSError, subprocess.CalledProcessError) as exc:
            logger.info("the working directory is not size-limited by a mount: %s", exc)
            self.image.unlink(missing_ok=True)
            return
        self.mounted = True
        (self.path / "lost+found").rmdir()
        self.path.chmod(0o755)
        self._baseline = self._used_blocks()

    async def _run(self, *argv: str) -> None:
        await anyio.run_process(list(argv), check=True)

    def _used_blocks(self) -> int:
        info = os.statvfs(self.path)
        return (info.f_blocks - info.f_bfree) * info.f_frsize

    def used(self) -> int:
        """Bytes the working directory uses on disk."""
        if self.mounted:
            return max(0, self._used_blocks() - self._baseline)
        return tree_bytes(self.path)

    def full(self) -> bool:
        """Whether the working directory is at (or past) its limit."""
        if self.limit is None:
            return False
        if self.mounted:
            info = os.statvfs(self.path)
            return info.f_bavail * info.f_frsize < _FULL_MARGIN
        return self.used() >= self.limit

    async def teardown(self) -> None:
        """Unmount and delete the image (the directory's files go with it)."""
        if self.mounted:
            try:
                await self._run("umount", str(self.path))
            except (OSError, subprocess.CalledProcessError):
                logger.warning("unmounting %s failed; detaching it lazily", self.path)
                await anyio.run_process(["umount", "-l", str(self.path)], check=False)
            self.mounted = False
        self.image.unlink(missing_ok=True)
