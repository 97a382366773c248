"""Process helpers: a shell's exit, its session's processes, signals that may miss.

Linux gives these without polling: a pidfd becomes readable the moment a
process ends, and ``/proc`` lists a session's members in one pass.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path

import anyio

__all__ = [
    "describe_exit",
    "kill_group",
    "kill_session",
    "proc_stat",
    "session_members",
    "wait_for_exit",
]

_PROC = Path("/proc")


async def wait_for_exit(pid: int, reap: Callable[[], None]) -> None:
    """Return when process ``pid`` (a child of ours) has ended.

    With a pidfd this is a plain wait on a descriptor. Without one, a worker
    thread blocks in ``reap`` (a blocking ``waitpid``) instead.
    """
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        await anyio.to_thread.run_sync(reap, abandon_on_cancel=True)
        return
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)


def proc_stat(pid: int | str) -> tuple[str, int, int] | None:
    """(state, process group, session) of ``pid`` from ``/proc``, or None if gone."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The command name is in parentheses and may contain anything: split after it.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return fields[0].decode(), int(fields[2]), int(fields[3])
    except (IndexError, ValueError):
        return None


def session_members(sid: int) -> list[int]:
    """Every live process of session ``sid`` (its leader included, if alive)."""
    members: list[int] = []
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return members
    for entry in entries:
        if entry.isdigit():
            stat = proc_stat(entry)
            if stat is not None and stat[2] == sid and stat[0] != "Z":
                members.append(int(entry))
    return members


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to process group ``pgid``; False if there was none."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid``: a shell, its jobs and their children."""
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def describe_exit(exit_code: int | None, signal_number: int | None) -> str:
    """A sentence for how a shell ended."""
    if signal_number is not None:
        try:
            name = signal.Signals(signal_number).name
        except ValueError:
            name = f"signal {signal_number}"
        return f"the shell was killed by {name}"
    if exit_code is None:
        return "the shell ended"
    return f"the shell exited with status {exit_code}"
