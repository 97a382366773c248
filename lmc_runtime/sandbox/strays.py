"""What an execution left running, and ending it while the interpreters live on.

A :class:`Census` lists a session's processes: its cgroup's, its host user's,
or (an unprivileged server with neither) the server's children that run one of
the session's sandboxes, with everything under them.

When an execution starts, :meth:`Census.snapshot` notes every process of the
session (pid and start time, so a reused pid is never mistaken for one seen).
After a limit ended the execution, :meth:`Census.end_strays` kills each
process that was not there then and runs in a sandbox that was: what the code
started and left behind (background jobs, ``setsid`` daemons, orphans adopted
by the sandbox's init). An interpreter's own sandbox, started during the
execution (a first run, a restart after a death), is new as a whole and kept.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import anyio

from .cgroups import Cgroup
from .kernel_files import read_raw

__all__ = [
    "Census",
    "CgroupCensus",
    "CgroupReaper",
    "Snapshot",
    "TreeCensus",
    "UserCensus",
    "proc_table",
]

logger = logging.getLogger(__name__)

#: A process as this module knows it: (pid, start time in clock ticks).
Key = tuple[int, int]
#: The session's processes when an execution started.
Snapshot = frozenset[Key]

#: How long the reaper waits for the killed processes to be gone.
_REAP_SECONDS = 10.0
#: How many times the strays are looked for and killed before giving up.
_ROUNDS = 50
#: How long one round waits for the killed to end.
_ENDS_SECONDS = 2.0


def _stat(pid: int) -> tuple[int, int] | None:
    """``(ppid, start time)`` of ``pid`` from ``/proc``, or None if it is gone
    (or a zombie: it has ended, and its parent will reap it)."""
    try:
        text = read_raw(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2 :].split()
    if not fields or fields[0] in (b"Z", b"X"):
        return None
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def proc_table(pids: Iterable[int] | None = None) -> dict[int, tuple[int, int]]:
    """``pid: (ppid, start time)`` for ``pids`` (default: every process)."""
    if pids is None:
        pids = (int(name) for name in os.listdir("/proc") if name.isdigit())
    table: dict[int, tuple[int, int]] = {}
    for pid in pids:
        found = _stat(pid)
        if found is not None:
            table[pid] = found
    return table


def _kill(pid: int, start: int) -> int | None:
    """SIGKILL ``pid`` if it is still the process that started at ``start``; a
    pidfd of it (readable once it has ended), or None."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return None
    found = _stat(pid)
    if found is not None and found[1] == start:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            return pidfd
    os.close(pidfd)
    return None


def _await_ends(pidfds: list[int], seconds: float) -> None:
    """Wait until every process of ``pidfds`` has ended, or ``seconds`` passed;
    close them."""
    try:
        waiting = select.poll()
        for fd in pidfds:
            waiting.register(fd, select.POLLIN)
        left, deadline = len(pidfds), time.monotonic() + seconds
        while left and (remaining := deadline - time.monotonic()) > 0:
            for fd, _ in waiting.poll(remaining * 1000):
                waiting.unregister(fd)
                left -= 1
    finally:
        for fd in pidfds:
            os.close(fd)


class Census:
    """A session's processes, and the strays among them (blocking: run the
    methods in a worker thread, but a ``cheap`` snapshot, which reads a few files)."""

    cheap = True

    def members(self) -> dict[int, tuple[int, int]]:
        """``pid: (ppid, start time)`` of every process of the session."""
        raise NotImplementedError

    def snapshot(self) -> Snapshot:
        return frozenset((pid, start) for pid, (_, start) in self.members().items())

    def strays(self, before: Snapshot) -> list[Key]:
        """Processes new since ``before`` whose sandbox (their topmost ancestor in
        the session) was there already."""
        table = self.members()
        found: list[Key] = []
        for pid, (ppid, start) in table.items():
            if (pid, start) in before:
                continue
            top, seen = pid, {pid}
            while ppid in table and ppid not in seen:
                top, seen = ppid, seen | {ppid}
                ppid = table[top][0]
            if (top, table[top][1]) in before:
                found.append((pid, start))
        return found

    def _freeze(self, frozen: bool) -> bool:
        """Stop (or let go on) every process of the session, where possible."""
        return False

    def end_strays(self, before: Snapshot) -> int:
        """Kill the strays until none is left (or give up); how many were killed."""
        killed = 0
        for _ in range(_ROUNDS):
            frozen = self._freeze(True)
            pidfds: list[int] = []
            try:
                strays = self.strays(before)
                for pid, start in strays:
                    pidfd = _kill(pid, start)
                    if pidfd is not None:
                        pidfds.append(pidfd)
            finally:
                if frozen:
                    self._freeze(False)
                _await_ends(pidfds, _ENDS_SECONDS)
            if not strays:
                return killed
            killed += len(strays)
        logger.warning("processes a session left behind survived being killed")
        return killed


class CgroupCensus(Census):
    """The processes of the session's cgroup; it is frozen while they are killed."""

    def __init__(self, cgroup: Cgroup) -> None:
        self.cgroup = cgroup

    def members(self) -> dict[int, tuple[int, int]]:
        return proc_table(self.cgroup.members())

    def _freeze(self, frozen: bool) -> bool:
        return self.cgroup.freeze(frozen)


class UserCensus(Census):
    """Every process of the session's own host user (it reads every process's)."""

    cheap = False

    def __init__(self, uid: int) -> None:
        self.uid = uid

    def members(self) -> dict[int, tuple[int, int]]:
        mine = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{name}").st_uid == self.uid:
                        mine.append(int(name))
        return proc_table(mine)


class TreeCensus(Census):
    """The children of this process whose command line names ``root`` (a
    session's folder: they run its sandboxes), and everything under them."""

    def __init__(self, root: Path) -> None:
        self.root = os.fsencode(root)

    def _names_root(self, pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            return False
        return any(arg == self.root or arg.startswith(self.root + b"/") for arg in argv)

    def members(self) -> dict[int, tuple[int, int]]:
        # Each run takes a census: walk down from this process (its threads'
        # ``children``), not through every process of the host, where Linux can.
        table: dict[int, tuple[int, int]] | None = None
        children: Callable[[int], list[int]] = _children
        if not _has_children_files():
            table = proc_table()
            children = _children_in(table)
        found: set[int] = set()
        stack = [pid for pid in children(os.getpid()) if self._names_root(pid)]
        while stack:
            pid = stack.pop()
            if pid not in found:
                found.add(pid)
                stack.extend(children(pid))
        if table is None:
            return proc_table(found)
        return {pid: table[pid] for pid in found}


def _has_children_files() -> bool:
    """Whether Linux lists each thread's children (``CONFIG_PROC_CHILDREN``)."""
    return os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _children_in(table: dict[int, tuple[int, int]]) -> Callable[[int], list[int]]:
    """The children of a process, as ``table`` (a :func:`proc_table`) has them."""
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    return lambda pid: kids.get(pid, [])


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (``/proc/PID/task/TID/children``)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                found.extend(int(child) for child in handle.read().split())
        except (OSError, ValueError):
            continue
    return found


class CgroupReaper:
    """Kills every process in the session's cgroup."""

    def __init__(self, cgroup: Cgroup) -> None:
        self.cgroup = cgroup

    async def kill_leftovers(self) -> None:
        delay = 0.01
        with anyio.move_on_after(_REAP_SECONDS):
            while True:
                await anyio.to_thread.run_sync(self.cgroup.kill)
                if not await anyio.to_thread.run_sync(self.cgroup.pids):
                    return
                await anyio.sleep(delay)  # the killed are being reaped
                delay = min(delay * 2, 0.5)
        logger.warning("processes of a session survived being killed: %s", self.cgroup.pids())
