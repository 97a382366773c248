"""Waits for tests: a task that waits on a descriptor of its own (for tests that close
a watched one), and the end of a process that is not the test's child."""

from __future__ import annotations

import os
import select
import time
from pathlib import Path

import anyio

__all__ = ["descends", "process_ended", "wait_on_a_new_pipe"]


async def wait_on_a_new_pipe(go: anyio.Event, woke: list[str]) -> None:
    """Once ``go`` is set, open a pipe, write to it and wait (bounded) until it is
    readable; then say so in ``woke``. Started before a descriptor is closed, it runs
    before the tasks that closing wakes, and may get that descriptor's number."""
    await go.wait()
    new, new_end = os.pipe()
    try:
        os.write(new_end, b"x")
        with anyio.move_on_after(5):
            await anyio.wait_readable(new)
            woke.append("the newcomer woke")
    finally:
        os.close(new)
        os.close(new_end)


def process_ended(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` (anyone's) has ended, or ends within ``timeout``
    seconds: its pidfd becomes readable (a zombie has ended). Where there are no
    pidfds, its existence is checked every 50 ms until the deadline."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):
        deadline = time.monotonic() + timeout
        while _exists(pid):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(int(timeout * 1000)))
    finally:
        os.close(fd)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def descends(pid: int, ancestor: int) -> bool:
    """Whether process ``pid`` descends from ``ancestor`` (walking ``/proc``'s parents)."""
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
        if pid == ancestor:
            return True
    return False
