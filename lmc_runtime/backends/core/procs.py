"""Process helpers for every backend: exits, groups, sessions, descriptors.

Linux gives these without polling: a pidfd becomes readable the moment a
process ends, and ``/proc`` lists a session's members in one pass. Where
there is no pidfd, a worker thread blocks in ``waitpid`` instead.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
from collections.abc import Callable
from pathlib import Path

import anyio

__all__ = [
    "describe_exit",
    "kill_session",
    "proc_stat",
    "read_available",
    "read_tail",
    "session_members",
    "signal_group",
    "wait_for_exit",
]

_PROC = Path("/proc")
_CHUNK = 256 * 1024


async def wait_for_exit(pid: int, reap: Callable[[], object]) -> None:
    """Return when process ``pid`` has ended.

    With a pidfd this is a plain wait on a descriptor. Without one, ``reap``
    (a blocking wait, such as ``Popen.wait``) runs in a worker thread.
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


def signal_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to process group ``pgid``; False if there was none to signal."""
    if pgid <= 0:
        return False
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


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
            found = proc_stat(entry)
            if found is not None and found[2] == sid and found[0] != "Z":
                members.append(int(entry))
    return members


def kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid``, even those that left its group."""
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def describe_exit(code: int | None, who: str) -> str:
    """How ``who`` ("the kernel", "node") ended, from a Popen-style return code."""
    if code is None:
        return f"{who} ended"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == signal.SIGKILL:
            return f"{who} was killed by SIGKILL (often the out-of-memory killer)"
        if -code == signal.SIGSEGV:
            return f"{who} crashed with a segmentation fault (SIGSEGV)"
        return f"{who} was killed by {name}"
    return f"{who} exited with code {code}"


def read_available(fd: int) -> bytes | None:
    """What non-blocking ``fd`` has now: ``b""`` if nothing, None at its end."""
    try:
        data = os.read(fd, _CHUNK)
    except BlockingIOError:
        return b""
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EINTR):
            return b""
        return None
    return data if data else None


def read_tail(path: Path, lines: int = 5, *, skip: str = "") -> str:
    """The last ``lines`` non-empty lines of a log file (never through a link or FIFO)."""
    try:
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
    kept = [ln for ln in text.splitlines() if ln.strip() and not (skip and skip in ln)]
    return "\n".join(kept[-lines:])
