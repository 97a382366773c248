"""Watching a kernel process from outside: its exit, and what it last wrote."""

from __future__ import annotations

import os
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
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - 4096))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [ln for ln in text.splitlines() if ln.strip() and "running over TCP" not in ln]
    return "\n".join(kept[-lines:])
