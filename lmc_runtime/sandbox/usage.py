"""A session's resource figures, for its status: what it uses, and how its
limits are enforced."""

from __future__ import annotations

from dataclasses import dataclass

from .cgroups import Cgroup
from .disk import WorkDisk
from .policy import SandboxPolicy

__all__ = ["Usage", "measure_usage"]


@dataclass(frozen=True)
class Usage:
    """A session's resource figures (None: not measured here) and how they are enforced."""

    memory_bytes: int | None
    processes: int | None
    cpu_seconds: float | None
    disk_bytes: int | None
    disk_limit_bytes: int | None
    sandboxed: bool
    network: bool
    limits_by: str
    disk_by: str


def measure_usage(
    cgroup: Cgroup | None, disk: WorkDisk, policy: SandboxPolicy, sandboxed: bool, limits_by: str
) -> Usage:
    """The figures now: from the session's cgroup (None: none) and its disk."""
    try:
        used: int | None = disk.used()
    except OSError:
        used = None
    return Usage(
        memory_bytes=cgroup.memory_bytes() if cgroup else None,
        processes=cgroup.processes() if cgroup else None,
        cpu_seconds=cgroup.cpu_seconds() if cgroup else None,
        disk_bytes=used,
        disk_limit_bytes=policy.limits.disk_bytes,
        sandboxed=sandboxed,
        network=policy.network is not False,
        limits_by=limits_by,
        disk_by=disk.mechanism,
    )
