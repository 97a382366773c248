"""Per-execution limit checks: CPU time while the code runs, then what the
cgroup, the disk and the code's own errors say once it is done; the clean
slate after a limit that leaves processes behind (a fork bomb); and, after any
limit that ended an execution, the end of what it left running."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import anyio
from anyio.abc import TaskGroup

from ..replies import Status
from .cgroups import Cgroup
from .cpu_watch import CpuWatch, Watched
from .disk import SCAN_ENTRIES, WorkDisk
from .policy import SessionLimits
from .probe import Probe
from .strays import Census, CgroupCensus, CgroupReaper

__all__ = ["CgroupReaper", "Guard", "Probe", "Reaper", "Violation"]

logger = logging.getLogger(__name__)


def _mib(size: int | None) -> str:
    return f"{(size or 0) / (1 << 20):g} MiB"


@dataclass(frozen=True)
class Violation:
    """One limit an execution ran into: its status, a sentence, and whether the
    session had to be restarted (its state lost) to recover."""

    status: Status
    text: str
    restart: bool = False


class Reaper(Protocol):
    """Ends every process a session's code left behind.

    Called once the session's interpreters are stopped, before they start
    again: it may kill every process of the session (its cgroup's, or every
    process of its host user), and returns once they are gone or it gave up.
    """

    async def kill_leftovers(self) -> None: ...


class Guard:
    """Checks one session's limits around each execution.

    ``reaper`` ends what a limit left behind; by default the cgroup's (and none
    without a cgroup, where stopping the interpreters ends their sandboxes).
    ``census`` lists the session's processes, so that what an execution ended
    by a limit left running can be killed; by default the cgroup's.
    """

    def __init__(
        self,
        limits: SessionLimits,
        cgroup: Cgroup | None,
        disk: WorkDisk,
        *,
        reaper: Reaper | None = None,
        census: Census | None = None,
    ) -> None:
        self.limits = limits
        self.cgroup = cgroup
        self.disk = disk
        if reaper is None and cgroup is not None:
            reaper = CgroupReaper(cgroup)
        self.reaper = reaper
        if census is None and cgroup is not None:
            census = CgroupCensus(cgroup)
        self.census = census
        # Counted from the end of the previous execution, so that a limit hit in
        # between (a bomb that put itself in the background) is reported next time.
        self._oom_seen = cgroup.oom_kills() if cgroup is not None else 0
        self._pids_seen = cgroup.process_limit_hits() if cgroup is not None else 0
        self._disk_known = False
        self._cpu_watch = (
            CpuWatch(cgroup.cpu_seconds, limits.cpu_seconds, os.cpu_count() or 1)
            if cgroup is not None and limits.cpu_seconds is not None
            else None
        )

    async def begin(self) -> Probe:
        """Counters now, before an execution starts."""
        cgroup = self.cgroup
        if cgroup is None:
            probe = Probe(None, 0, 0)
        else:
            probe = Probe(cgroup.cpu_seconds(), self._oom_seen, self._pids_seen)
        if (census := self.census) is not None and census.cheap:  # no worker thread
            probe.procs = census.snapshot()
        elif census is not None:
            probe.procs = await anyio.to_thread.run_sync(census.snapshot)
        if not self._disk_known:
            # Afterwards, the measurement at the end of the previous execution:
            # a disk filled in between is reported once, by the next execution.
            await self.disk.measure()
            self._disk_known = True
        probe.disk_full = self.disk.full()
        return probe

    async def make_room(self) -> None:
        """Before an execution: free the inodes kept for the host's own files if
        the code used all the others."""
        if self.disk.inodes_full():  # one statvfs: no worker thread for each run
            await anyio.to_thread.run_sync(self.disk.release_reserve)

    def spill_room(self) -> int | None:
        """Bytes the next spill file may take: half the room left on the session's
        disk, so saved outputs never fill it and always leave the code room."""
        room = self.disk.room()
        return None if room is None else room // 2

    async def kill_leftovers(self) -> None:
        """End every process the code left (the interpreters are stopped first).
        What they did until then (more failed forks) is not news for the next run."""
        if self.reaper is not None:
            await self.reaper.kill_leftovers()
        if self.cgroup is not None:
            self._oom_seen = self.cgroup.oom_kills()
            self._pids_seen = self.cgroup.process_limit_hits()

    async def end_strays(self, probe: Probe) -> None:
        """Kill what the execution started and left running (the interpreters and
        the sandboxes they run in stay, with their state)."""
        census, before = self.census, probe.procs
        if census is not None and before is not None:
            killed = await anyio.to_thread.run_sync(census.end_strays, before)
            if killed:
                logger.info("killed %d processes an execution left running", killed)

    def watch_cpu(
        self, task_group: TaskGroup, probe: Probe, interrupt: Callable[[], Awaitable[None]]
    ) -> None:
        """Interrupt the code once it has used its CPU time (the whole session's,
        from the cgroup; see :mod:`.cpu_watch`), until :meth:`unwatch_cpu`."""
        if self._cpu_watch is not None and probe.cpu_start is not None:
            probe.watched = Watched(probe.cpu_start, interrupt)
            self._cpu_watch.begin(task_group, probe.watched)

    def unwatch_cpu(self, probe: Probe) -> None:
        """The execution of ``probe`` is over: it is interrupted no more."""
        if self._cpu_watch is not None and probe.watched is not None:
            self._cpu_watch.end(probe.watched)

    async def finish(self, probe: Probe) -> list[Violation]:
        """The limits this execution ran into, in the order they matter: a process
        limit first (its restart ends the rest), then memory, CPU, files, disk."""
        found: list[Violation] = []
        limits, cgroup = self.limits, self.cgroup
        if cgroup is not None:
            self._oom_seen, self._pids_seen = cgroup.oom_kills(), cgroup.process_limit_hits()
        counted = cgroup is not None and "pids" in cgroup.controllers
        if (counted and self._pids_seen > probe.pids_start) or (not counted and probe.fork_failed):
            found.append(
                Violation(
                    Status.PROCESS_LIMIT,
                    f"The code tried to run more than {limits.processes} processes, the "
                    "session's limit. Its processes were ended and the session restarted; "
                    "its state was lost.",
                    restart=True,
                )
            )
        if cgroup is not None and self._oom_seen > probe.oom_start:
            found.append(
                Violation(
                    Status.MEMORY_LIMIT,
                    f"The session ran out of memory (its limit is {_mib(limits.memory_bytes)}): "
                    "the out-of-memory killer ended its process, which was restarted; "
                    "its state was lost.",
                )
            )
        elif probe.memory_error:
            found.append(
                Violation(
                    Status.MEMORY_LIMIT,
                    "An allocation failed: the code asked for more memory than the session "
                    f"may use ({_mib(limits.memory_bytes)}). The session itself is fine.",
                )
            )
        if probe.watched is not None and probe.watched.exceeded:
            found.append(
                Violation(
                    Status.CPU_LIMIT,
                    f"The code used its {limits.cpu_seconds:g} s of CPU time for one execution "
                    "and was interrupted.",
                )
            )
        if probe.file_too_large:
            found.append(
                Violation(
                    Status.FILE_SIZE_LIMIT,
                    f"A file reached the largest size allowed ({_mib(limits.file_size_bytes)}); "
                    "the write failed.",
                )
            )
        disk = await self._disk_violation(probe)
        if disk is not None:
            found.append(disk)
        return found

    async def _disk_violation(self, probe: Probe) -> Violation | None:
        """The disk limit, when the disk filled up during this execution (not
        again on each run while it stays full)."""
        used = await self.disk.measure()
        if self.disk.reserve_missing:  # not a worker thread for every run
            await anyio.to_thread.run_sync(self.disk.keep_reserve)
        if probe.disk_full or not self.disk.full():
            if probe.no_space:
                return Violation(
                    Status.DISK_LIMIT,
                    "A write failed: no space was left on the device (the session's disk, "
                    "or /tmp, /var/tmp or /dev/shm, each capped at "
                    f"{_mib(self.limits.disk_bytes)}). Delete files to make room.",
                )
            return None
        limit = _mib(self.limits.disk_bytes)
        if self.disk.inodes_full():
            return Violation(
                Status.DISK_LIMIT,
                "The session's disk has no room for another file or folder: it holds as "
                "many as it can. Delete files to make room.",
            )
        if self.disk.over_scan_bound:
            return Violation(
                Status.DISK_LIMIT,
                f"The session's disk holds more than {SCAN_ENTRIES} files and folders, "
                f"more than it may (its limit is {limit}). Delete files to make room.",
            )
        return Violation(
            Status.DISK_LIMIT,
            f"The session's disk is full: {_mib(used)} used of {limit}. Delete files to make room.",
        )
