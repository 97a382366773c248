"""A sandbox's metrics, as E2B's ``GET /sandboxes/{id}/metrics`` answers them:
CPU, memory and disk, sampled from its session's cgroup and disk every
:data:`INTERVAL` seconds (the first as the sandbox is made, so its metrics
are never empty), the last :data:`KEPT` of them kept."""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskStatus

if TYPE_CHECKING:
    from .registry import E2BSandbox

__all__ = ["INTERVAL", "Sample", "metrics_of", "sample", "sample_while_running"]

logger = logging.getLogger(__name__)

#: Seconds between two samples (E2B's own interval).
INTERVAL = 5.0
#: How many samples a sandbox keeps: its last hour.
KEPT = 720
#: Where each sandbox's samples are, in its ``layers``.
LAYER = "metrics"


@dataclass(frozen=True)
class Sample:
    at: float
    cpu_count: int
    cpu_used_pct: float
    mem_used: int
    mem_total: int
    disk_used: int
    disk_total: int

    def body(self) -> dict[str, Any]:
        """E2B's ``SandboxMetric``."""
        stamp = datetime.fromtimestamp(self.at, tz=UTC).isoformat().replace("+00:00", "Z")
        return {
            "timestamp": stamp,
            "timestampUnix": int(self.at),
            "cpuCount": self.cpu_count,
            "cpuUsedPct": round(self.cpu_used_pct, 2),
            "memUsed": self.mem_used,
            "memTotal": self.mem_total,
            "memCache": 0,
            "diskUsed": self.disk_used,
            "diskTotal": self.disk_total,
        }


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def _disk_total(sandbox: E2BSandbox, limit: int | None) -> int:
    if limit:
        return limit
    try:
        info = os.statvfs(sandbox.session.sandbox.work_dir)
    except OSError:
        return 0
    return info.f_blocks * info.f_frsize


class _Sampler:
    """The samples of one sandbox, and the CPU time seen at the last one."""

    def __init__(self) -> None:
        self.samples: deque[Sample] = deque(maxlen=KEPT)
        self.cpu: tuple[float, float] | None = None  # (wall, cpu seconds)

    def take(self, sandbox: E2BSandbox) -> None:
        """One sample (blocking, cheap: a few files of the cgroup and the disk)."""
        usage = sandbox.session.sandbox.usage()
        limits = sandbox.session.policy.limits
        cpus = max(1, round(limits.cpu_quota)) if limits.cpu_quota else os.cpu_count() or 1
        now = time.time()
        pct = 0.0
        if usage.cpu_seconds is not None:
            if self.cpu is not None and now > self.cpu[0]:
                used = usage.cpu_seconds - self.cpu[1]
                pct = min(100.0, max(0.0, 100.0 * used / (now - self.cpu[0]) / cpus))
            self.cpu = (now, usage.cpu_seconds)
        self.samples.append(
            Sample(
                at=now,
                cpu_count=cpus,
                cpu_used_pct=pct,
                mem_used=usage.memory_bytes or 0,
                mem_total=limits.memory_bytes or _host_memory(),
                disk_used=usage.disk_bytes or 0,
                disk_total=_disk_total(sandbox, usage.disk_limit_bytes),
            )
        )


def _sampler(sandbox: E2BSandbox) -> _Sampler:
    sampler = sandbox.layers.get(LAYER)
    if not isinstance(sampler, _Sampler):
        sampler = sandbox.layers[LAYER] = _Sampler()
    return sampler


async def sample(sandbox: E2BSandbox) -> None:
    """Take one sample of ``sandbox`` (its first, as it is made)."""
    try:
        await anyio.to_thread.run_sync(_sampler(sandbox).take, sandbox)
    except Exception:
        logger.debug("sampling sandbox %s failed", sandbox.shown, exc_info=True)


async def sample_while_running(
    sandbox: E2BSandbox, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Sample ``sandbox`` now (started once this first sample is taken, so its
    metrics are never empty), then every :data:`INTERVAL` seconds while its
    session lives (not while it is paused: a paused sandbox uses no CPU)."""
    session = sandbox.session
    await sample(sandbox)
    task_status.started()
    while True:
        with anyio.move_on_after(INTERVAL):
            await session.ended.wait()
        if session.ended.is_set():
            return
        if sandbox.paused_at is None:
            await sample(sandbox)


def metrics_of(
    sandbox: E2BSandbox, start: float | None = None, end: float | None = None
) -> list[dict[str, Any]]:
    """The samples of ``sandbox`` taken from ``start`` to ``end`` (epoch seconds)."""
    return [
        sample.body()
        for sample in _sampler(sandbox).samples
        if (start is None or sample.at >= start) and (end is None or sample.at <= end)
    ]
