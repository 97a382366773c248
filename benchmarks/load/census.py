"""What one ``lmc serve`` holds on its host, counted: for load and leak checks.

A :class:`Census` of a server process counts what it and its sessions hold:
the processes of its tree (and any other live process whose command line or
cgroup names its data directory or its sessions' cgroups), their open file
descriptors and resident memory, the server's own descriptors (but for the
connections clients hold open at that moment) and threads, the
files under its temporary folders and its data directory's ``sessions/``, the
mounts that name the data directory or bwrap, and the sessions' cgroup folders
(``lmc-<session>-<8 hex>``) under the server's own cgroups. Two censuses taken
when the same sessions are open should match; what a closed session left
behind shows as a difference (:meth:`Census.above`).

Linux only (``/proc``); psutil reads the processes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from lmc_runtime.sandbox.cgroups import cgroup_parents

__all__ = ["Census", "CensusTarget", "describe_processes", "server_pid", "take_census"]

#: The counts a leak check compares (RSS is a measure, not a count).
COUNTS = ("processes", "fds", "server_fds", "server_threads", "files", "mounts", "cgroups")


@dataclass(frozen=True)
class CensusTarget:
    """Which server to count: its pid, its data directory, the folders where it
    makes temporary files, and the prefix of its sessions' cgroup folders
    (``lmc-`` counts every session's of the host; ``lmc-<replica>-`` a replica's)."""

    pid: int
    data_dir: Path | None = None
    temp_dirs: tuple[Path, ...] = ()
    cgroup_prefix: str = "lmc-"


@dataclass(frozen=True)
class Census:
    """The counts of one moment (:data:`COUNTS`), and the tree's resident memory."""

    processes: int
    fds: int
    server_fds: int
    server_threads: int
    files: int
    mounts: int
    cgroups: int
    rss_bytes: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def above(self, before: Census) -> dict[str, tuple[int, int]]:
        """The counts higher now than in ``before``: name -> (before, now)."""
        return {
            name: (getattr(before, name), getattr(self, name))
            for name in COUNTS
            if getattr(self, name) > getattr(before, name)
        }


def take_census(target: CensusTarget) -> Census:
    """Count what ``target``'s server holds now; psutil.NoSuchProcess if it is gone."""
    server = psutil.Process(target.pid)
    clients = _client_connections(server)
    with server.oneshot():
        server_fds = server.num_fds() - clients
        server_threads = server.num_threads()
    tree = _processes(server, target)
    fds, rss = -clients, 0
    for process in tree:
        try:
            fds += process.num_fds()
            rss += process.memory_info().rss
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue
    folders = [*target.temp_dirs]
    if target.data_dir is not None:
        folders.append(target.data_dir / "sessions")
    return Census(
        processes=len(tree) - 1,  # the server itself is not counted
        fds=fds,
        server_fds=server_fds,
        server_threads=server_threads,
        files=sum(_entries(folder) for folder in folders),
        mounts=_mounts(target),
        cgroups=len(_cgroup_dirs(target)),
        rss_bytes=rss,
    )


def describe_processes(target: CensusTarget) -> list[str]:
    """What each process a census of ``target`` counts runs, sorted: the first
    words of its command line, paths by their last part (the same for the same
    role in any session). What a report shows when the counts differ."""
    server = psutil.Process(target.pid)
    found: list[str] = []
    for process in _processes(server, target):
        with contextlib.suppress(psutil.Error):
            if process.pid != server.pid:
                words = process.cmdline()[:6]
                found.append(" ".join(os.path.basename(w) if "/" in w else w for w in words))
    return sorted(found)


def _client_connections(server: psutil.Process) -> int:
    """The server's sockets of connections clients hold open now: theirs, not
    the server's to close (one a client has left, in CLOSE_WAIT, is not)."""
    connections = server.net_connections(kind="inet")
    ports = {c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN and c.laddr}
    return sum(
        1
        for c in connections
        if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port in ports
    )


def _processes(server: psutil.Process, target: CensusTarget) -> list[psutil.Process]:
    """The server, its descendants, and every other process that names its data
    directory (on its command line) or one of its sessions' cgroups."""
    found = {server.pid: server}
    with contextlib.suppress(psutil.NoSuchProcess):
        found.update((child.pid, child) for child in server.children(recursive=True))
    marks = [f"/{target.cgroup_prefix}"]
    if target.data_dir is not None:
        marks.append(str(target.data_dir))
    # Not this process or its parents, whose command lines may name the data directory.
    here = psutil.Process()
    counting = {here.pid, *(parent.pid for parent in here.parents())}
    for process in psutil.process_iter():
        if process.pid in found or process.pid in counting or not _names(process.pid, marks):
            continue
        # A zombie outside the server's tree waits for the init it was handed
        # to (killed with its parent, a sandbox's bwrap): it holds nothing, and
        # that init reaps it when it will, not the server.
        with contextlib.suppress(psutil.Error):
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
        found[process.pid] = process
    return list(found.values())


def _names(pid: int, marks: list[str]) -> bool:
    """Whether process ``pid``'s command line names the data directory, or its
    cgroup one of the sessions' (``/proc`` read directly: it may have just ended)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        cgroup = Path(f"/proc/{pid}/cgroup").read_text(errors="replace")
    except OSError:
        return False
    return any(mark in cmdline for mark in marks[1:]) or marks[0] in cgroup


def _entries(folder: Path) -> int:
    """Files and folders below ``folder`` (not following links; 0 if it is missing)."""
    count = 0
    for _, dirs, files in os.walk(folder):
        count += len(dirs) + len(files)
    return count


def _mounts(target: CensusTarget) -> int:
    """Mounts of the server's namespace that name its data directory or bwrap."""
    try:
        text = Path(f"/proc/{target.pid}/mountinfo").read_text(errors="replace")
    except OSError:
        return 0
    marks = ["bwrap"] + ([str(target.data_dir)] if target.data_dir is not None else [])
    return sum(1 for line in text.splitlines() if any(mark in line for mark in marks))


def _cgroup_dirs(target: CensusTarget) -> list[Path]:
    """The sessions' cgroup folders under each of the server's cgroups."""
    proc = Path(f"/proc/{target.pid}")
    parents = cgroup_parents(mountinfo=proc / "mountinfo", self_cgroup=proc / "cgroup")
    found: list[Path] = []
    for _, _, parent in parents:
        found += _children(parent, target.cgroup_prefix)
    return found


def _children(parent: Path, prefix: str) -> Iterable[Path]:
    try:
        with os.scandir(parent) as entries:
            return [Path(e.path) for e in entries if e.name.startswith(prefix) and e.is_dir()]
    except OSError:
        return []


def server_pid(port: int) -> int | None:
    """The pid of the process listening on TCP ``port`` here, if any."""
    for conn in psutil.net_connections(kind="tcp"):
        listening = conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port
        if listening and conn.pid is not None:
            return conn.pid
    return None
