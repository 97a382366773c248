"""A task that waits on a descriptor of its own: for tests that close a watched one."""

from __future__ import annotations

import os

import anyio

__all__ = ["wait_on_a_new_pipe"]


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
