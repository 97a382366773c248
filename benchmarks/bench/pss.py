"""Proportional memory (PSS) and CPU time of a server's process tree, by kind.

A page shared by n processes counts 1/n in each one's PSS, so the PSS of every
process of a server, summed, is the memory the server holds, shared pages
counted once. Read from ``/proc/PID/smaps_rollup`` (Linux 4.14 and later); a
process that ends between the listing and the read counts nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "KindTotal",
    "ProcessMemory",
    "by_kind",
    "children",
    "cpu_seconds",
    "memory_of",
    "tree_memory",
]

PROC = Path("/proc")
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcessMemory:
    """One process's memory, in KiB."""

    pid: int
    kind: str
    pss: int
    rss: int
    private_dirty: int


@dataclass
class KindTotal:
    """The processes of one kind: how many, and their memory summed (KiB)."""

    count: int = 0
    pss: int = 0
    rss: int = 0
    private_dirty: int = 0


def _read(pid: int, name: str) -> str:
    try:
        return (PROC / str(pid) / name).read_text(errors="replace")
    except OSError:
        return ""


def children(pid: int) -> list[int]:
    """The children of ``pid`` (of all its threads)."""
    found: list[int] = []
    try:
        tasks = os.listdir(PROC / str(pid) / "task")
    except OSError:
        return found
    for task in tasks:
        found += [int(child) for child in _read(pid, f"task/{task}/children").split()]
    return found


def child_running(*markers: bytes) -> int | None:
    """The newest child of this process whose command line holds one of ``markers``."""
    found = [
        pid
        for pid in children(os.getpid())
        if any(marker in _read_bytes(pid, "cmdline") for marker in markers)
    ]
    return max(found) if found else None


def _read_bytes(pid: int, name: str) -> bytes:
    try:
        return (PROC / str(pid) / name).read_bytes()
    except OSError:
        return b""


def _tree(root: int) -> list[int]:
    """``root`` and every process under it, parents first."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop(0)
        out.append(pid)
        todo += children(pid)
    return out


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` from the third (the state) on."""
    return _read(pid, "stat").rsplit(")", 1)[-1].split()


def _parent(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[1]) if len(fields) > 1 else 0


def _uid(pid: int) -> int | None:
    for line in _read(pid, "status").splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    return None


def _kind(pid: int, parent: str) -> str:
    """What ``pid`` is, given what its parent is."""
    argv = _read(pid, "cmdline").split("\0")
    if any(arg.endswith("_zygote.py") for arg in argv[:3]):
        if parent != "fork server":
            return "fork server"
        # Its forks: the kernels (each the sandbox's user once it has started) and
        # the starter, which stays root and forks the sandboxes' holders.
        return "forked kernel" if _uid(pid) != 0 else "fork server's starter"
    if any(arg.endswith("_exec.py") for arg in argv[:4]):
        return "exec wrapper"
    name = os.path.basename(argv[0])
    if name == "bwrap":
        return "bwrap"
    if parent == "bwrap" and name == "sleep":
        return "holder"
    if "-m" in argv[:3] and any("kernel" in arg for arg in argv[:4]):
        return "kernel"
    return name or "?"


def memory_of(pid: int, kind: str) -> ProcessMemory | None:
    """``pid``'s memory now, or None if it has ended."""
    fields: dict[str, int] = {}
    for line in _read(pid, "smaps_rollup").splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB":
            fields[name] = int(parts[0])
    if not fields:
        return None
    return ProcessMemory(
        pid, kind, fields.get("Pss", 0), fields.get("Rss", 0), fields.get("Private_Dirty", 0)
    )


def tree_memory(root: int) -> list[ProcessMemory]:
    """The memory of ``root`` (kind ``server``) and of every process under it."""
    kinds: dict[int, str] = {}
    out: list[ProcessMemory] = []
    for pid in _tree(root):
        kinds[pid] = "server" if pid == root else _kind(pid, kinds.get(_parent(pid), ""))
        found = memory_of(pid, kinds[pid])
        if found is not None:
            out.append(found)
    return out


def cpu_seconds(root: int) -> float:
    """The CPU time (user and system) of ``root``'s tree: of every process in it,
    and of the children each has reaped."""
    total = 0
    for pid in _tree(root):
        fields = _stat(pid)
        if len(fields) > 14:
            total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total / _TICK


def by_kind(processes: Iterable[ProcessMemory]) -> dict[str, KindTotal]:
    """The processes summed by kind."""
    totals: dict[str, KindTotal] = {}
    for process in processes:
        total = totals.setdefault(process.kind, KindTotal())
        total.count += 1
        total.pss += process.pss
        total.rss += process.rss
        total.private_dirty += process.private_dirty
    return totals
