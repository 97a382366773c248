"""The data directory of one ``lmc serve``: held with a lock, cleaned at start.

Only one service may use a data directory: at start it removes every session
folder it finds there (their mounts, cgroups and files), which a second,
running service would still be using.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LMCError
from ..sandbox.stale import clean_stale_sessions
from .write_ahead import close_lost_runs

if TYPE_CHECKING:
    from .transcript import Transcripts

__all__ = ["DataDirInUse", "DataDirLock", "recover_sessions"]

logger = logging.getLogger(__name__)


class DataDirInUse(LMCError):
    """Another ``lmc serve`` holds the data directory."""


class DataDirLock:
    """An exclusive ``flock`` on ``DATA_DIR/lmc-serve.lock``, held while serving;
    the kernel drops it when the process ends, however it ends."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "lmc-serve.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`DataDirInUse` at once."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.path, flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirInUse(
                f"another lmc serve is using the data directory {self.path.parent}; "
                "stop it or choose another --data-dir"
            ) from None
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
    stale = await clean_stale_sessions(sessions_dir)
    if stale.cleaned:
        logger.warning("cleaned up %d stale sessions", len(stale.cleaned))
    for name, left in stale.left.items():
        logger.error("could not clean up the stale session %s; left: %s", name, "; ".join(left))
    await close_lost_runs(transcripts, stale.found)
    return list(stale.found)
