"""The data directory of one ``lmc serve``: held with a lock, cleaned at start.

Only one service may use a data directory: at start it removes every session
folder it finds there (their mounts, cgroups and files), which a second,
running service would still be using.

A second lock, ``lmc-reap.lock``, orders the two that may touch a dead server's
session folders: the next start, which cleans them before it makes sessions of
its own, and the dead server's reaper (``reaper.py``), which releases their
mounts and cgroups at once, only if no server holds the directory then.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..errors import LMCError
from ..sandbox.stale import clean_stale_sessions
from .write_ahead import close_lost_runs

if TYPE_CHECKING:
    from .transcript import Transcripts

__all__ = ["DataDirInUse", "DataDirLock", "reaping", "recover_sessions", "served"]

_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC

logger = logging.getLogger(__name__)


class DataDirInUse(LMCError):
    """Another ``lmc serve`` holds the data directory."""


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _reaping_lock(data_dir: Path) -> int:
    """A descriptor holding ``DATA_DIR/lmc-reap.lock`` (a blocking wait: whoever
    holds it cleans or releases session folders, work that ends)."""
    fd = os.open(data_dir / "lmc-reap.lock", _FLAGS, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def reaping(data_dir: Path) -> Iterator[None]:
    """Hold ``DATA_DIR/lmc-reap.lock``: no start cleans the session folders
    meanwhile, nor makes sessions of its own."""
    fd = _reaping_lock(data_dir)
    try:
        yield
    finally:
        os.close(fd)


def served(data_dir: Path) -> bool:
    """Whether an ``lmc serve`` holds ``data_dir`` (its lock is tried and, if
    free, dropped at once). Ask it under :func:`reaping`: a start that finds the
    lock taken tries again once the reaping lock is free."""
    fd = os.open(data_dir / "lmc-serve.lock", _FLAGS, 0o600)
    try:
        return not _try_lock(fd)
    finally:
        os.close(fd)


class DataDirLock:
    """An exclusive ``flock`` on ``DATA_DIR/lmc-serve.lock``, held while serving;
    the kernel drops it when the process ends, however it ends."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "lmc-serve.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`DataDirInUse` (at once, unless a dead
        server's reaper is looking whether the directory is served: then once it
        has looked)."""
        fd = os.open(self.path, _FLAGS, 0o600)
        try:
            if not _try_lock(fd):
                # The reaper takes this lock a moment, holding the reaping one.
                with reaping(self.path.parent):
                    taken = _try_lock(fd)
                if not taken:
                    raise DataDirInUse(
                        f"another lmc serve is using the data directory {self.path.parent}; "
                        "stop it or choose another --data-dir"
                    )
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


async def recover_sessions(sessions_dir: Path, transcripts: Transcripts) -> list[str]:
    """Clean what a predecessor on this data directory left of its sessions (it
    stopped without a shutdown), give their unfinished runs a final message
    (``server_lost``), and return their names. What cannot be cleaned is logged."""
    lock = await anyio.to_thread.run_sync(_reaping_lock, sessions_dir.parent)
    try:
        stale = await clean_stale_sessions(sessions_dir)
    finally:
        os.close(lock)
    if stale.cleaned:
        logger.warning("cleaned up %d stale sessions", len(stale.cleaned))
    for name, left in stale.left.items():
        logger.error("could not clean up the stale session %s; left: %s", name, "; ".join(left))
    await close_lost_runs(transcripts, stale.found)
    return list(stale.found)
