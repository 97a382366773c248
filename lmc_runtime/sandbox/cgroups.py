"""A session's cgroup: cgroup v2 when it is writable and has the controllers,
otherwise the v1 hierarchies (memory, pids, cpu, cpuacct, freezer) a hybrid host has.
Its limits hold for the whole session, running or not: memory, tasks, and a CPU
quota (``cpu.max``, ``cpu.cfs_quota_us`` on v1) that keeps an idle session's
background work to its share. It is made under this process's own cgroup, so the
limits the host puts on the runtime keep applying to the sessions.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from .kernel_files import HeldFiles, read_raw
from .policy import SessionLimits

__all__ = ["Cgroup", "cgroup_parents", "create_cgroup"]

logger = logging.getLogger(__name__)


def _read(path: Path) -> str | None:
    try:
        return read_raw(path).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _keyed(text: str | None, key: str) -> int:
    """The number after ``key`` in a flat-keyed file's text (``memory.events``)."""
    for line in (text or "").splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _number(path: Path) -> int | None:
    text = _read(path)
    return int(text) if text is not None and text.isdigit() else None


@dataclass
class Cgroup:
    """One session's cgroup in v2 (``dirs["unified"]``) or in v1 hierarchies."""

    version: int
    dirs: dict[str, Path] = field(default_factory=dict)
    #: The counters each run reads, their files held open (see :meth:`remove`).
    counters: HeldFiles = field(default_factory=HeldFiles, repr=False, compare=False)

    @property
    def procs_files(self) -> tuple[Path, ...]:
        """The ``cgroup.procs`` files a new process writes its pid into (one per
        folder: co-mounted v1 controllers such as ``cpu,cpuacct`` share one)."""
        return tuple(dict.fromkeys(d / "cgroup.procs" for d in self.dirs.values()))

    @property
    def controllers(self) -> tuple[str, ...]:
        if self.version == 2:
            return ("memory", "pids", "cpu")
        return tuple(self.dirs)

    def _file(self, controller: str, name: str) -> Path | None:
        base = self.dirs.get("unified" if self.version == 2 else controller)
        return base / name if base is not None else None

    def _write(self, controller: str, name: str, value: str) -> bool:
        path = self._file(controller, name)
        if path is None:
            return False
        try:
            path.write_text(value, encoding="ascii")
        except OSError as exc:
            logger.debug("cannot write %s: %s", path, exc)
            return False
        return True

    def apply(self, limits: SessionLimits) -> list[str]:
        """Write the memory, process and CPU limits; the names of those that
        could not be written."""
        failed: list[str] = []
        if limits.memory_bytes is not None:
            memory = str(limits.memory_bytes)
            if self.version == 2:
                self._write("memory", "memory.max", memory)
                self._write("memory", "memory.swap.max", "0")
                self._write("memory", "memory.oom.group", "1")
            else:
                self._write("memory", "memory.limit_in_bytes", memory)
                self._write("memory", "memory.memsw.limit_in_bytes", memory)
        if limits.processes is not None:
            self._write("pids", "pids.max", str(limits.processes))
        if limits.cpu_quota is not None and not self.set_cpu_quota(limits.cpu_quota):
            failed.append("cpu_quota")
        return failed

    def set_cpu_quota(self, cpus: float) -> bool:
        """Let the session use at most ``cpus`` CPUs' worth of time, whether or not
        code is running; False when the quota could not be set."""
        quota = max(1000, round(cpus * _CPU_PERIOD_US))
        if self.version == 2:
            return self._write("cpu", "cpu.max", f"{quota} {_CPU_PERIOD_US}")
        return self._write("cpu", "cpu.cfs_period_us", str(_CPU_PERIOD_US)) and self._write(
            "cpu", "cpu.cfs_quota_us", str(quota)
        )

    def cpu_quota(self) -> float | None:
        """The CPU quota in force, in CPUs (None: none)."""
        if self.version == 2:
            path = self._file("cpu", "cpu.max")
            quota, _, period = ((_read(path) if path is not None else None) or "").partition(" ")
        else:
            quota = str(self._value("cpu", "", "cpu.cfs_quota_us") or "")
            period = str(self._value("cpu", "", "cpu.cfs_period_us") or "")
        if not (quota.isdigit() and period.strip().isdigit() and int(period)):
            return None
        return int(quota) / int(period)

    def _value(self, controller: str, v2: str, v1: str) -> int | None:
        path = self._file(controller, v2 if self.version == 2 else v1)
        return _number(path) if path is not None else None

    def memory_bytes(self) -> int | None:
        return self._value("memory", "memory.current", "memory.usage_in_bytes")

    def processes(self) -> int | None:
        return self._value("pids", "pids.current", "pids.current")

    def _counter(self, controller: str, name: str) -> str | None:
        path = self._file(controller, name)
        return self.counters.read(path) if path is not None else None

    def cpu_seconds(self) -> float | None:
        """CPU time used by the whole session so far."""
        if self.version == 2:
            text = self._counter("cpu", "cpu.stat")
            return _keyed(text, "usage_usec") / 1e6 if text is not None else None
        text = self._counter("cpuacct", "cpuacct.usage")
        return int(text) / 1e9 if text is not None and text.isdigit() else None

    def oom_kills(self) -> int:
        """How many processes the OOM killer has ended in this cgroup."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        return _keyed(self._counter("memory", name), "oom_kill")

    def process_limit_hits(self) -> int:
        """How many forks failed because of ``pids.max``."""
        return _keyed(self._counter("pids", "pids.events"), "max")

    def members(self) -> list[int]:
        """The pids of one hierarchy (v1: the freezer's, whose processes a freeze
        stops; v2: the cgroup's): what a census of the session reads at each run,
        one file where :meth:`pids` reads every hierarchy's (five in v1)."""
        base = self.dirs.get("unified" if self.version == 2 else "freezer")
        if base is None:
            return self.pids()
        return sorted(int(p) for p in (_read(base / "cgroup.procs") or "").split() if p.isdigit())

    def pids(self) -> list[int]:
        found: set[int] = set()
        for procs in self.procs_files:
            found.update(int(p) for p in (_read(procs) or "").split() if p.isdigit())
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL every process in the cgroup (frozen first, so none can fork)."""
        if self.version == 2 and self._write("unified", "cgroup.kill", "1"):
            return
        frozen = self.freeze(True)
        for _ in range(20):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        if frozen:
            self.freeze(False)

    def freeze(self, frozen: bool) -> bool:
        """Freeze (or thaw) every process in the cgroup; False where it cannot."""
        if self.version == 2:
            return self._write("unified", "cgroup.freeze", "1" if frozen else "0")
        return self._write("freezer", "freezer.state", "FROZEN" if frozen else "THAWED")

    def remove(self) -> bool:
        """Remove the cgroup's directories (its counters' files closed first);
        False while processes remain in it."""
        self.counters.close()
        done = True
        for path in list(self.dirs.values()):
            try:
                path.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                done = False
        return done


#: The v1 hierarchies a session's cgroup uses.
_V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct", "freezer")

#: The CPU quota's period, in microseconds (the kernel's default).
_CPU_PERIOD_US = 100_000


def _described(how: str, limits: SessionLimits, failed: list[str]) -> str:
    """``how`` the session is limited, with its CPU quota (or why it has none)."""
    if limits.cpu_quota is None:
        return how
    if "cpu_quota" in failed:
        return how + "; no cpu quota (it could not be set)"
    return how + f"; cpu quota {limits.cpu_quota:g} core(s)"


def _mounts(mountinfo: Path) -> dict[str, Path]:
    """Cgroup mount points by controller (``unified`` for cgroup2)."""
    found: dict[str, Path] = {}
    for line in (_read(mountinfo) or "").splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        if tail[0] == "cgroup2":
            found.setdefault("unified", Path(fields[4]))
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                found.setdefault(option, Path(fields[4]))
    return found


def _own_paths(self_cgroup: Path) -> dict[str, str]:
    """This process's cgroup path in each hierarchy (``unified`` for v2)."""
    found: dict[str, str] = {}
    for line in (_read(self_cgroup) or "").splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else ["unified"]:
            found[controller] = path
    return found


def _v2(base: Path, name: str) -> Cgroup | None:
    enabled = set((_read(base / "cgroup.subtree_control") or "").split())
    if not {"memory", "pids", "cpu"} <= enabled:
        available = set((_read(base / "cgroup.controllers") or "").split())
        if not {"memory", "pids", "cpu"} <= available:
            return None
        try:
            (base / "cgroup.subtree_control").write_text("+memory +pids +cpu", encoding="ascii")
        except OSError:
            return None
    try:
        (base / name).mkdir(exist_ok=True)
    except OSError:
        return None
    return Cgroup(2, {"unified": base / name})


def cgroup_parents(
    *,
    mountinfo: Path = Path("/proc/self/mountinfo"),
    self_cgroup: Path = Path("/proc/self/cgroup"),
) -> list[tuple[int, str, Path]]:
    """Where this process creates sessions' cgroups: ``(version, controller, folder)``
    for cgroup v2 (``unified``) and each v1 hierarchy a session may use."""
    mounts, own = _mounts(mountinfo), _own_paths(self_cgroup)
    found: list[tuple[int, str, Path]] = []
    if "unified" in mounts and "unified" in own:
        found.append((2, "unified", mounts["unified"] / own["unified"].lstrip("/")))
    for controller in _V1_CONTROLLERS:
        if controller in mounts and controller in own:
            found.append((1, controller, mounts[controller] / own[controller].lstrip("/")))
    return found


def create_cgroup(
    name: str,
    limits: SessionLimits,
    *,
    mountinfo: Path = Path("/proc/self/mountinfo"),
    self_cgroup: Path = Path("/proc/self/cgroup"),
) -> tuple[Cgroup | None, str]:
    """A new cgroup ``name`` with ``limits`` applied, or None and why not."""
    mounts, own = _mounts(mountinfo), _own_paths(self_cgroup)
    if "unified" in mounts and "unified" in own:
        base = mounts["unified"] / own["unified"].lstrip("/")
        cgroup = _v2(base, name)
        if cgroup is not None:
            return cgroup, _described("cgroup v2", limits, cgroup.apply(limits))
    dirs: dict[str, Path] = {}
    for controller in _V1_CONTROLLERS:
        if controller not in mounts or controller not in own:
            continue
        path = mounts[controller] / own[controller].lstrip("/") / name
        try:
            path.mkdir(exist_ok=True)
        except OSError as exc:
            logger.debug("no %s cgroup: %s", controller, exc)
            continue
        dirs[controller] = path
    if not {"memory", "pids"} & set(dirs):
        Cgroup(1, dirs).remove()
        how = "no writable cgroup with the memory or pids controller"
        return None, how + ("; no cpu quota" if limits.cpu_quota is not None else "")
    cgroup = Cgroup(1, dirs)
    failed = cgroup.apply(limits)
    return cgroup, _described("cgroup v1 (" + ", ".join(dirs) + ")", limits, failed)
