"""Watching a kernel process from outside: its exit, and what it last wrote."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import anyio

__all__ = ["read_log_tail", "wait_for_exit"]


async def wait_for_exit(pid: int, running: Callable[[], bool]) -> None:
    """Return when process ``pid`` has ended.

    On Linux a pidfd becomes readable the instant the process ends: no polling.
    Elsewhere ``running`` is asked once a second; that is liveness, never the
    output path, which stays event-driven.
    """
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        while running():
            await anyio.sleep(1.0)
        return
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)


def read_log_tail(path: Path, lines: int = 5) -> str:
    """The last ``lines`` non-empty lines of a kernel's own log, minus known noise."""
    try:  # never through a link, never blocking on a FIFO planted in its place
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        os.lseek(fd, max(0, os.lseek(fd, 0, os.SEEK_END) - 4096), os.SEEK_SET)
        text = os.read(fd, 8192).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)
    kept = [ln for ln in text.splitlines() if ln.strip() and "running over TCP" not in ln]
    return "\n".join(kept[-lines:])
