"""Processes a test file left running, orphaned: found after each file, ended, named.

No process may outlive its owner, however the owner ends: not a sandbox's
(the runtime's rule), and not one a test starts. One that does is adopted by
init (its parent becomes PID 1) and runs on, unseen by the test that passed.
After each test file, one scan of ``/proc`` looks for such orphans among the
processes started during the run by users no account has: the uids ``lmc
serve`` leases its sandboxes (``lmc setup`` reserves them in ``/etc/subuid``),
and the made-up ones tests start processes as. Each found is given a moment to
end by itself (the supervisors of a SIGKILLed server are orphans until they
notice); the rest are killed, and named in a warning with the file that ran
last (:class:`LeftBehind`), so that the run's warnings summary says which file
left what, without failing the run.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import select
import signal
import time
from dataclasses import dataclass

from lmc_runtime.procs import linux_procfs

__all__ = [
    "LeftBehind",
    "Orphan",
    "end",
    "left_behind",
    "orphans",
    "own_start",
    "process_stat",
    "watched",
]

#: How long an orphan has to end by itself before it is killed.
GRACE = 5.0
#: How long the killed have to end.
_KILLED_END = 10.0


class LeftBehind(UserWarning):
    """A test file left processes running after it (they were killed)."""


@dataclass(frozen=True)
class Orphan:
    """A process whose parent is init: its pid, start time (clock ticks after
    boot, so that a reused pid is never taken for it), user and command line."""

    pid: int
    start: int
    uid: int
    command: str

    def __str__(self) -> str:
        return f"pid {self.pid} (uid {self.uid}): {self.command}"


def process_stat(pid: int | str) -> tuple[str, int, int] | None:
    """``(state, parent, start time)`` of ``pid`` (a zombie's state is ``Z``), or
    None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()  # the name may hold anything
    try:
        return fields[0].decode(), int(fields[1]), int(fields[19])
    except (IndexError, ValueError, UnicodeDecodeError):
        return None


def own_start() -> int:
    """When this process started (as :class:`Orphan` counts a start)."""
    found = process_stat(os.getpid())
    assert found is not None
    return found[2]


def watched() -> bool:
    """Whether orphans are looked for here: Linux's ``/proc``, as root (only
    root starts processes as other users)."""
    return linux_procfs() and os.geteuid() == 0


@functools.cache
def _accountless(uid: int) -> bool:
    """Whether ``uid`` is a user no account has (a sandbox's, a test's own)."""
    if uid in (0, os.geteuid()):
        return False
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return True
    return False


def _uid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().rstrip(b"\0").split(b"\0")
    except OSError:
        return "?"
    return os.fsdecode(b" ".join(argv))[:200]


def orphans(since: int) -> list[Orphan]:
    """The running orphans of users no account has that started at ``since``
    or later (one read of each process's ``stat``; more for the orphans)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        stat = process_stat(name)
        if stat is None or stat[1] != 1 or stat[0] in ("Z", "X") or stat[2] < since:
            continue
        pid = int(name)
        uid = _uid(pid)
        if uid is not None and _accountless(uid):
            found.append(Orphan(pid, stat[2], uid, _command(pid)))
    return found


def _pidfd(orphan: Orphan) -> int | None:
    """A pidfd of ``orphan``, if it still runs (and is still that process)."""
    try:
        fd = os.pidfd_open(orphan.pid)
    except OSError:
        return None
    stat = process_stat(orphan.pid)
    if stat is None or stat[2] != orphan.start or stat[0] in ("Z", "X"):
        os.close(fd)
        return None
    return fd


def _running_after(fds: dict[int, Orphan], seconds: float) -> dict[int, Orphan]:
    """Those of ``fds`` still running after ``seconds`` (or as soon as none is);
    the pidfds of the others are closed."""
    left = dict(fds)
    waiting = select.poll()
    for fd in left:
        waiting.register(fd, select.POLLIN)
    deadline = time.monotonic() + seconds
    while left and (remaining := deadline - time.monotonic()) > 0:
        for fd, _ in waiting.poll(remaining * 1000):
            waiting.unregister(fd)
            os.close(fd)
            del left[fd]
    return left


def end(found: list[Orphan], grace: float = GRACE) -> list[Orphan]:
    """Give ``found`` ``grace`` seconds to end, then SIGKILL the rest and wait
    (bounded) for their end; those that had to be killed."""
    fds = {fd: orphan for orphan in found if (fd := _pidfd(orphan)) is not None}
    running = _running_after(fds, grace)
    for fd in running:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    for fd in _running_after(running, _KILLED_END):
        os.close(fd)
    return list(running.values())


def left_behind(since: int, grace: float = GRACE) -> list[Orphan]:
    """The orphans started at ``since`` or later that did not end within
    ``grace`` seconds, killed."""
    found = orphans(since)
    return end(found, grace) if found else []
