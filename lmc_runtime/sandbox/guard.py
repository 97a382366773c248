"""Per-execution limit checks: CPU time while the code runs, then what the
cgroup, the disk and the code's own errors say once it is done."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from ..messages import Message
from .cgroups import Cgroup
from .disk import WorkDisk
from .policy import SessionLimits

__all__ = ["Guard", "Probe", "Violation"]

_FILE_SIZE_SIGNS = ("File too large", "File size limit exceeded")


def _mib(size: int | None) -> str:
    return f"{(size or 0) / (1 << 20):g} MiB"


@dataclass(frozen=True)
class Violation:
    """One limit an execution ran into: its status, a sentence, and whether the
    session had to be restarted (its state lost) to recover."""

    status: str
    text: str
    restart: bool = False


@dataclass
class Probe:
    """Counters taken when an execution starts, and what was seen while it ran."""

    cpu_start: float | None
    oom_start: int
    pids_start: int
    disk_full: bool = False
    cpu_exceeded: bool = False
    memory_error: bool = False
    file_too_large: bool = False
    seen: list[str] = field(default_factory=list)

    def observe(self, message: Message) -> None:
        """Note the signs of a limit in one of the execution's messages."""
        if message.type != "console" or message.format != "output":
            return
        extras = message.extras or {}
        if extras.get("error") == "MemoryError":
            self.memory_error = True
        if (extras.get("error") or extras.get("stream") == "stderr") and any(
            sign in str(message.content) for sign in _FILE_SIZE_SIGNS
        ):
            self.file_too_large = True


class Guard:
    """Checks one session's limits around each execution."""

    def __init__(self, limits: SessionLimits, cgroup: Cgroup | None, disk: WorkDisk) -> None:
        self.limits = limits
        self.cgroup = cgroup
        self.disk = disk
        # Counted from the end of the previous execution, so that a limit hit in
        # between (a bomb that put itself in the background) is reported next time.
        self._oom_seen = cgroup.oom_kills() if cgroup is not None else 0
        self._pids_seen = cgroup.process_limit_hits() if cgroup is not None else 0

    async def begin(self) -> Probe:
        """Counters now, before an execution starts."""
        cgroup = self.cgroup
        if cgroup is None:
            probe = Probe(None, 0, 0)
        else:
            probe = Probe(cgroup.cpu_seconds(), self._oom_seen, self._pids_seen)
        probe.disk_full = await anyio.to_thread.run_sync(self.disk.full)
        return probe

    async def watch_cpu(self, probe: Probe, interrupt: Callable[[], Awaitable[None]]) -> None:
        """Interrupt the code once it has used its CPU time (the whole session's,
        from the cgroup). It sleeps until the earliest moment the budget could be
        spent at full use of every CPU, then looks again: no fixed polling."""
        limit = self.limits.cpu_seconds
        if limit is None or self.cgroup is None or probe.cpu_start is None:
            return
        cpus = max(1, os.cpu_count() or 1)
        while True:
            now = self.cgroup.cpu_seconds()
            if now is None:
                return
            remaining = limit - (now - probe.cpu_start)
            if remaining <= 0:
                probe.cpu_exceeded = True
                await interrupt()
                return
            await anyio.sleep(max(remaining / cpus, 0.05))

    async def finish(self, probe: Probe) -> list[Violation]:
        """The limits this execution ran into, in the order they matter."""
        found: list[Violation] = []
        limits, cgroup = self.limits, self.cgroup
        if cgroup is not None:
            self._oom_seen, self._pids_seen = cgroup.oom_kills(), cgroup.process_limit_hits()
        if cgroup is not None and self._oom_seen > probe.oom_start:
            found.append(
                Violation(
                    "memory_limit",
                    f"The session ran out of memory (its limit is {_mib(limits.memory_bytes)}): "
                    "the out-of-memory killer ended its process, which was restarted; "
                    "its state was lost.",
                )
            )
        elif probe.memory_error:
            found.append(
                Violation(
                    "memory_limit",
                    "An allocation failed: the code asked for more memory than the session "
                    f"may use ({_mib(limits.memory_bytes)}). The session itself is fine.",
                )
            )
        if cgroup is not None and self._pids_seen > probe.pids_start:
            found.append(
                Violation(
                    "process_limit",
                    f"The code tried to run more than {limits.processes} processes, the "
                    "session's limit. Its processes were ended and the session restarted; "
                    "its state was lost.",
                    restart=True,
                )
            )
        if probe.cpu_exceeded:
            found.append(
                Violation(
                    "cpu_limit",
                    f"The code used its {limits.cpu_seconds:g} s of CPU time for one execution "
                    "and was interrupted.",
                )
            )
        if probe.file_too_large:
            found.append(
                Violation(
                    "file_size_limit",
                    f"A file reached the largest size allowed ({_mib(limits.file_size_bytes)}); "
                    "the write failed.",
                )
            )
        # Reported when the directory fills up, not again on each run while it is full.
        if not probe.disk_full and await anyio.to_thread.run_sync(self.disk.full):
            used = await anyio.to_thread.run_sync(self.disk.used)
            found.append(
                Violation(
                    "disk_limit",
                    f"The working directory is full: {_mib(used)} used of "
                    f"{_mib(limits.disk_bytes)}. Delete files to make room.",
                )
            )
        return found
