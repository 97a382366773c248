"""Cleaning up what a runtime killed without a shutdown (SIGKILL, a crash) left behind.

A session's directory holds a loop-mounted disk image on ``work/`` and has
cgroup folders named ``lmc-<session>-<8 hex>`` next to the runtime's own
cgroup. A graceful shutdown removes them. After a crash, what they hold of the
system is released at once (:func:`release_stale_sessions`, by the server's
reaper, ``lmc_runtime/service/reaper.py``): the processes still in those
cgroups are killed, the cgroups removed, and every mount under the directory
detached (lazily when busy) with ``UMOUNT_NOFOLLOW``. The folders stay until
the next start cleans them (:func:`clean_stale_sessions`, which does the same,
then removes the folders without following any link).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from ..hostfs import remove_tree
from .cgroups import Cgroup, cgroup_parents

__all__ = [
    "StaleSessions",
    "clean_session_dir",
    "clean_stale_sessions",
    "mounts_under",
    "release_session_dir",
    "release_stale_sessions",
    "remove_cgroup",
    "stale_cgroups",
]

logger = logging.getLogger(__name__)

#: umount2 flags (linux/fs.h): detach lazily; do not follow a final symbolic link.
_MNT_DETACH = 2
_UMOUNT_NOFOLLOW = 8
#: How long the processes of a cgroup may take to go away.
_CGROUP_WAIT = 10.0
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """A mountinfo path field with its octal escapes (``\\040`` for a space) decoded."""
    return _OCTAL_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), field)


def mounts_under(root: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> list[Path]:
    """Mount points at or below ``root``, deepest first."""
    try:
        text = mountinfo.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        point = Path(_unescape(fields[4]))
        if point == root or root in point.parents:
            found.append(point)
    return sorted(set(found), key=lambda path: len(path.parts), reverse=True)


def _umount(point: Path) -> None:
    """Unmount ``point`` (never through a link); detach it lazily if it is busy."""
    libc = ctypes.CDLL(None, use_errno=True)
    for flags in (_UMOUNT_NOFOLLOW, _UMOUNT_NOFOLLOW | _MNT_DETACH):
        if libc.umount2(os.fsencode(point), flags) == 0:
            return
        error = ctypes.get_errno()
        if error in (errno.EINVAL, errno.ENOENT):  # no longer a mount point
            return
        if error != errno.EBUSY:
            logger.warning("cannot unmount the stale %s: %s", point, os.strerror(error))
            return
    logger.warning("the stale %s stayed busy even for a lazy unmount", point)


def stale_cgroups(name: str, parents: list[tuple[int, str, Path]] | None = None) -> list[Cgroup]:
    """The cgroups ``lmc-<name>-<8 hex>`` a session ``name`` may have left."""
    pattern = re.compile(rf"lmc-{re.escape(name)}-[0-9a-f]{{8}}")
    groups: dict[tuple[int, str], Cgroup] = {}
    for version, controller, parent in cgroup_parents() if parents is None else parents:
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        for entry in entries:
            if pattern.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                cgroup = groups.setdefault((version, entry.name), Cgroup(version))
                cgroup.dirs[controller] = Path(entry.path)
    return list(groups.values())


async def remove_cgroup(cgroup: Cgroup) -> bool:
    """Kill what is left in ``cgroup`` and remove it; False if it is still there
    after a bounded wait (the killed processes take a moment to be reaped, so
    removal is retried)."""
    delay = 0.01
    with anyio.move_on_after(_CGROUP_WAIT):
        while True:
            cgroup.kill()
            if cgroup.remove():
                return True
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.5)
    return False


def _remove_tree(root: Path) -> list[str]:
    return remove_tree(root)  # deep trees, planted links and locked folders included


async def clean_session_dir(root: Path, *, cgroups: bool = True) -> list[str]:
    """Remove the stale session folder ``root``: its processes (through its
    cgroups), its mounts and its files; what could not be removed (see
    :func:`~lmc_runtime.hostfs.remove_tree`), empty if ``root`` is gone."""
    root = root.parent.resolve() / root.name  # the folder itself is never resolved
    await release_session_dir(root, cgroups=cgroups)
    return await anyio.to_thread.run_sync(_remove_tree, root)


async def release_session_dir(root: Path, *, cgroups: bool = True) -> None:
    """End what the stale session folder ``root`` holds of the system: the
    processes in its cgroups, the cgroups, and its mounts (its disk's loop
    device, attached with autoclear, goes with its mount). Its files stay."""
    root = root.parent.resolve() / root.name
    if cgroups:
        for cgroup in await anyio.to_thread.run_sync(stale_cgroups, root.name):
            if not await remove_cgroup(cgroup):
                logger.warning(
                    "the stale cgroup %s could not be removed", list(cgroup.dirs.values())
                )
    for point in await anyio.to_thread.run_sync(mounts_under, root):
        await anyio.to_thread.run_sync(_umount, point)


@dataclass(frozen=True)
class StaleSessions:
    """The session folders a start found left behind, and what stayed of them."""

    found: list[str] = field(default_factory=list)
    #: By session: what could not be removed of its folder.
    left: dict[str, list[str]] = field(default_factory=dict)

    @property
    def cleaned(self) -> list[str]:
        """The sessions whose folders are gone."""
        return [name for name in self.found if name not in self.left]


async def clean_stale_sessions(sessions_dir: Path) -> StaleSessions:
    """Clean every session folder in ``sessions_dir`` (call it only when none of
    them is in use); which were found, and what could not be removed of each."""
    try:
        names = sorted(os.listdir(sessions_dir))
    except FileNotFoundError:
        return StaleSessions()
    stale = StaleSessions(names)
    for name in names:
        logger.warning("cleaning up session %s, left behind by a runtime that did not stop", name)
        left = await clean_session_dir(sessions_dir / name)
        if left:
            stale.left[name] = left
    return stale


async def release_stale_sessions(sessions_dir: Path) -> list[str]:
    """:func:`release_session_dir` for every session folder in ``sessions_dir``
    (call it only when none of them is in use); their names. Their folders and
    files stay, for the next start to find (:func:`clean_stale_sessions`)."""
    try:
        names = sorted(os.listdir(sessions_dir))
    except FileNotFoundError:
        return []
    for name in names:
        await release_session_dir(sessions_dir / name)
    return names
