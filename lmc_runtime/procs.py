"""Process helpers for the whole runtime (the backends, the sandbox, the bench): exits,
groups, sessions, descriptors.

Linux gives these without polling: a pidfd becomes readable the moment a
process ends, and ``/proc`` lists a session's members in one pass. Elsewhere
(macOS), or with ``LMC_RUNTIME_PORTABLE=1`` in the environment (which forces
the portable paths, for tests), a worker thread blocks in ``waitpid`` instead,
and psutil (which ipykernel brings) lists processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import math
import os
import select
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import anyio

__all__ = [
    "PORTABLE",
    "close_watched",
    "describe_exit",
    "end_session",
    "group_members",
    "kill_session",
    "linux_procfs",
    "nonblocking_pipe",
    "proc_stat",
    "read_available",
    "read_tail",
    "readable_now",
    "session_members",
    "signal_group",
    "wait_for_exit",
    "wait_readable",
]

_PROC = Path("/proc")
_CHUNK = 256 * 1024
#: Set to ``1`` in the environment, this forces the portable paths even on Linux.
PORTABLE = "LMC_RUNTIME_PORTABLE"


def linux_procfs() -> bool:
    """Whether Linux's ``/proc`` and pidfds serve here (not forced off by :data:`PORTABLE`)."""
    return (
        sys.platform.startswith("linux")
        and os.environ.get(PORTABLE, "0") in ("", "0")
        and _PROC.is_dir()
    )


def nonblocking_pipe(*, write_too: bool = False) -> tuple[int, int]:
    """A pipe whose read end (and write end, if ``write_too``) does not block. Its
    descriptors are not inherited (PEP 446), as ``pipe2(O_CLOEXEC)``'s are, but
    ``pipe2`` is Linux's only."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    if write_too:
        os.set_blocking(write, False)
    return read, write


async def wait_for_exit(pid: int, reap: Callable[[], object]) -> None:
    """Return when process ``pid`` has ended.

    With a pidfd this is a plain wait on a descriptor. Without one, ``reap``
    (a blocking wait, such as ``Popen.wait``) runs in a worker thread.
    """
    try:
        if not linux_procfs():
            raise OSError("no pidfd here")
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
    """(state, process group, session) of ``pid`` (``Z`` for a zombie), or None if gone."""
    if not linux_procfs():
        return _portable_stat(int(pid))
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


def _portable_stat(pid: int) -> tuple[str, int, int] | None:
    """:func:`proc_stat` without ``/proc``: the group and session from ``os``, the
    state from psutil (``S`` when psutil is missing)."""
    try:
        group, session = os.getpgid(pid), os.getsid(pid)
    except OSError:
        return None
    try:
        import psutil
    except ImportError:
        return "S", group, session
    try:
        zombie = psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return None
    return ("Z" if zombie else "S"), group, session


def _all_pids() -> list[str]:
    """Every process id: from ``/proc``, else psutil; empty if neither is there."""
    if linux_procfs():
        try:
            return [entry for entry in os.listdir(_PROC) if entry.isdigit()]
        except OSError:
            return []
    try:
        import psutil
    except ImportError:
        return []
    return [str(pid) for pid in psutil.pids()]


def session_members(sid: int) -> list[int]:
    """Every live process of session ``sid`` (its leader included, if alive)."""
    return _members(2, sid)


def group_members(pgid: int) -> list[int]:
    """Every live process of process group ``pgid`` (its leader included, if alive)."""
    return _members(1, pgid)


def _members(field: int, value: int) -> list[int]:
    """The live processes whose :func:`proc_stat` ``field`` is ``value``."""
    members: list[int] = []
    for entry in _all_pids():
        if entry.isdigit():
            found = proc_stat(entry)
            if found is not None and found[field] == value and found[0] != "Z":
                members.append(int(entry))
    return members


def kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid``, even those that left its group."""
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


async def end_session(sid: int) -> None:
    """:func:`kill_session` in a worker thread: it reads every process of the host
    from ``/proc``, which must not hold up the event loop (milliseconds a close)."""
    await anyio.to_thread.run_sync(kill_session, sid)


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


def close_watched(fd: int) -> None:
    """Close ``fd``, which a task may be waiting on (``anyio.wait_readable`` or
    ``wait_writable``), from the event loop's thread: that task is woken (with
    ClosedResourceError), and the descriptor is closed only once it has run.

    anyio's asyncio backend drops a woken waiter's registration by descriptor
    number when that task next runs. Regression: closed at once, the number was
    reused in between (under load, by the inotify descriptor that watches for a
    new kernel's sockets), the new waiter's registration was dropped instead, it
    never woke, and its session failed to start after 60 s."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no event loop in this thread: no task of it waits
        _close_quietly(fd)
        return
    anyio.notify_closing(fd)
    loop.call_soon(_close_quietly, fd)  # after the woken task's wake-up, already queued


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def wait_readable(fd: int, timeout: float | None) -> bool:
    """Whether ``fd`` has something to read (or its end) within ``timeout`` seconds
    (None: however long it takes); False if it is closed.

    Through ``poll(2)``: a server with many sessions holds descriptors past 1024,
    where ``select(2)`` stops working."""
    poller = select.poll()
    wait = None if timeout is None else max(0, math.ceil(timeout * 1000))
    try:
        poller.register(fd, select.POLLIN)  # ValueError for a negative one (closed)
        events = poller.poll(wait)
    except (OSError, ValueError):
        return False
    return any(not mask & select.POLLNVAL for _, mask in events)


def readable_now(fd: int) -> bool:
    """Whether ``fd`` has something to read at this moment (False if it is closed)."""
    return wait_readable(fd, 0)


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
