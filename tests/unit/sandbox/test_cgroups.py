"""Cgroup discovery and limits, on a fake cgroup tree (v1 and v2)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.sandbox.cgroups import create_cgroup
from lmc_runtime.sandbox.policy import SessionLimits


def _v1_tree(tmp_path: Path) -> tuple[Path, Path]:
    lines = []
    for number, controller in enumerate(["memory", "pids", "cpu", "cpuacct", "freezer"]):
        (tmp_path / controller / "mine").mkdir(parents=True)
        lines.append(
            f"{30 + number} 1 0:{number} / {tmp_path / controller} rw - cgroup cgroup rw,{controller}"
        )
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("\n".join(lines) + "\n")
    own = tmp_path / "self_cgroup"
    own.write_text(
        "5:memory:/mine\n4:pids:/mine\n3:cpu:/mine\n2:cpuacct:/mine\n1:freezer:/mine\n0::/\n"
    )
    return mountinfo, own


def test_v1_limits_are_written_in_each_hierarchy(tmp_path: Path) -> None:
    mountinfo, own = _v1_tree(tmp_path)
    limits = SessionLimits(memory_bytes=64 << 20, processes=32)
    cgroup, how = create_cgroup("s1", limits, mountinfo=mountinfo, self_cgroup=own)
    assert cgroup is not None and cgroup.version == 1 and "v1" in how
    assert (tmp_path / "memory/mine/s1/memory.limit_in_bytes").read_text() == str(64 << 20)
    assert (tmp_path / "pids/mine/s1/pids.max").read_text() == "32"
    assert tmp_path / "cpuacct/mine/s1/cgroup.procs" in cgroup.procs_files


def test_v1_counters_are_read(tmp_path: Path) -> None:
    mountinfo, own = _v1_tree(tmp_path)
    cgroup, _ = create_cgroup("s1", SessionLimits(), mountinfo=mountinfo, self_cgroup=own)
    assert cgroup is not None
    base = tmp_path
    (base / "memory/mine/s1/memory.oom_control").write_text("oom_kill_disable 0\noom_kill 3\n")
    (base / "pids/mine/s1/pids.events").write_text("max 7\n")
    (base / "cpuacct/mine/s1/cpuacct.usage").write_text("2500000000\n")
    (base / "memory/mine/s1/memory.usage_in_bytes").write_text("4096\n")
    assert cgroup.oom_kills() == 3
    assert cgroup.process_limit_hits() == 7
    assert cgroup.cpu_seconds() == 2.5
    assert cgroup.memory_bytes() == 4096


def test_v2_is_preferred_when_it_has_the_controllers(tmp_path: Path) -> None:
    base = tmp_path / "unified" / "svc"
    base.mkdir(parents=True)
    (base / "cgroup.controllers").write_text("cpu memory pids\n")
    (base / "cgroup.subtree_control").write_text("")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"41 31 0:38 / {tmp_path / 'unified'} rw - cgroup2 cgroup2 rw\n")
    own = tmp_path / "self_cgroup"
    own.write_text("0::/svc\n")
    limits = SessionLimits(memory_bytes=64 << 20, processes=32)
    cgroup, how = create_cgroup("s2", limits, mountinfo=mountinfo, self_cgroup=own)
    assert cgroup is not None and cgroup.version == 2 and how.startswith("cgroup v2")
    assert (base / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (base / "s2/memory.max").read_text() == str(64 << 20)
    assert (base / "s2/memory.oom.group").read_text() == "1"
    assert (base / "s2/pids.max").read_text() == "32"
    (base / "s2/cpu.stat").write_text("usage_usec 1500000\nuser_usec 1\n")
    (base / "s2/memory.events").write_text("low 0\noom 1\noom_kill 2\n")
    assert cgroup.cpu_seconds() == 1.5 and cgroup.oom_kills() == 2


def test_no_cgroup_says_why(tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("")
    own = tmp_path / "self_cgroup"
    own.write_text("0::/\n")
    cgroup, how = create_cgroup("s3", SessionLimits(), mountinfo=mountinfo, self_cgroup=own)
    assert cgroup is None and "no writable cgroup" in how and "no cpu quota" in how


def test_v1_cpu_quota_holds_for_the_whole_session(tmp_path: Path) -> None:
    """Guards the session-wide CPU quota on cgroup v1: background work of an idle
    session once burned whole cores."""
    mountinfo, own = _v1_tree(tmp_path)
    cgroup, how = create_cgroup(
        "s1", SessionLimits(cpu_quota=1.5), mountinfo=mountinfo, self_cgroup=own
    )
    assert cgroup is not None and "cpu" in cgroup.controllers
    assert (tmp_path / "cpu/mine/s1/cpu.cfs_period_us").read_text() == "100000"
    assert (tmp_path / "cpu/mine/s1/cpu.cfs_quota_us").read_text() == "150000"
    assert cgroup.cpu_quota() == 1.5
    assert "cpu quota 1.5 core(s)" in how


def test_v2_cpu_quota_is_cpu_max(tmp_path: Path) -> None:
    """Guards the session-wide CPU quota on cgroup v2 (``cpu.max``)."""
    base = tmp_path / "unified" / "svc"
    base.mkdir(parents=True)
    (base / "cgroup.controllers").write_text("cpu memory pids\n")
    (base / "cgroup.subtree_control").write_text("memory pids cpu\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"41 31 0:38 / {tmp_path / 'unified'} rw - cgroup2 cgroup2 rw\n")
    own = tmp_path / "self_cgroup"
    own.write_text("0::/svc\n")
    cgroup, how = create_cgroup(
        "s2", SessionLimits(cpu_quota=0.5), mountinfo=mountinfo, self_cgroup=own
    )
    assert cgroup is not None and cgroup.version == 2
    assert (base / "s2/cpu.max").read_text() == "50000 100000"
    assert cgroup.cpu_quota() == 0.5
    assert how == "cgroup v2; cpu quota 0.5 core(s)"


def test_a_quota_that_cannot_be_written_is_not_claimed(tmp_path: Path) -> None:
    """Without the v1 cpu hierarchy the session has no quota, and says so."""
    mountinfo, own = _v1_tree(tmp_path)
    own.write_text("5:memory:/mine\n4:pids:/mine\n0::/\n")
    cgroup, how = create_cgroup("s1", SessionLimits(), mountinfo=mountinfo, self_cgroup=own)
    assert cgroup is not None and "cpu" not in cgroup.controllers
    assert cgroup.cpu_quota() is None
    assert "no cpu quota" in how


def test_no_quota_asked_writes_none(tmp_path: Path) -> None:
    mountinfo, own = _v1_tree(tmp_path)
    limits = SessionLimits(cpu_quota=None)
    cgroup, how = create_cgroup("s1", limits, mountinfo=mountinfo, self_cgroup=own)
    assert cgroup is not None and "quota" not in how
    assert not (tmp_path / "cpu/mine/s1/cpu.cfs_quota_us").exists()


def test_cpu_quota_is_validated() -> None:
    with pytest.raises(ValueError, match="cpu_quota"):
        SessionLimits(cpu_quota=0)


def test_co_mounted_controllers_share_one_procs_file(tmp_path: Path) -> None:
    """``cpu,cpuacct`` mounted together: the pid is written once, not twice."""
    (tmp_path / "cpu,cpuacct/mine").mkdir(parents=True)
    (tmp_path / "pids/mine").mkdir(parents=True)
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        f"30 1 0:1 / {tmp_path / 'cpu,cpuacct'} rw - cgroup cgroup rw,cpu,cpuacct\n"
        f"31 1 0:2 / {tmp_path / 'pids'} rw - cgroup cgroup rw,pids\n"
    )
    own = tmp_path / "self_cgroup"
    own.write_text("2:cpu,cpuacct:/mine\n1:pids:/mine\n")
    cgroup, _ = create_cgroup("s1", SessionLimits(), mountinfo=mountinfo, self_cgroup=own)
    assert cgroup is not None
    assert len(cgroup.procs_files) == 2
    assert (tmp_path / "cpu,cpuacct/mine/s1/cpu.cfs_quota_us").read_text() == "100000"


def test_a_census_reads_one_hierarchy_where_a_kill_reads_them_all(tmp_path: Path) -> None:
    """Guards the run's cost: a census (at each run's start) reads the freezer's
    ``cgroup.procs`` alone, where reading all five v1 hierarchies cost 4 more
    files a run; :meth:`pids`, which a kill reads, still takes in every one."""
    mountinfo, own = _v1_tree(tmp_path)
    cgroup, _ = create_cgroup("s1", SessionLimits(), mountinfo=mountinfo, self_cgroup=own)
    assert cgroup is not None
    (tmp_path / "freezer/mine/s1/cgroup.procs").write_text("12\n11\n")
    (tmp_path / "pids/mine/s1/cgroup.procs").write_text("11\n12\n13\n")
    assert cgroup.members() == [11, 12]
    assert cgroup.pids() == [11, 12, 13]


def test_a_census_without_a_freezer_reads_every_hierarchy(tmp_path: Path) -> None:
    (tmp_path / "pids/mine").mkdir(parents=True)
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"31 1 0:2 / {tmp_path / 'pids'} rw - cgroup cgroup rw,pids\n")
    own = tmp_path / "self_cgroup"
    own.write_text("1:pids:/mine\n")
    cgroup, _ = create_cgroup("s1", SessionLimits(), mountinfo=mountinfo, self_cgroup=own)
    assert cgroup is not None
    (tmp_path / "pids/mine/s1/cgroup.procs").write_text("7\n")
    assert cgroup.members() == [7]


def test_the_counters_each_run_reads_are_held_open_and_read_as_they_are_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: each run opened, read and closed the session's counter files
    (CPU time, OOM kills, process-limit hits), an open taking some 15 µs inside
    ``lmc serve``. They are opened once and read with one pread each."""
    mountinfo, own = _v1_tree(tmp_path)
    cgroup, _ = create_cgroup("s1", SessionLimits(), mountinfo=mountinfo, self_cgroup=own)
    assert cgroup is not None
    oom = tmp_path / "memory/mine/s1/memory.oom_control"
    oom.write_text("oom_kill 1\n")
    (tmp_path / "pids/mine/s1/pids.events").write_text("max 0\n")
    (tmp_path / "cpuacct/mine/s1/cpuacct.usage").write_text("1000000000\n")
    opened: list[str] = []
    real_open = os.open

    def counted(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counted)
    for run in range(20):
        oom.write_text(f"oom_kill {run}\n")  # the same file, as the kernel's is
        assert cgroup.oom_kills() == run
        assert cgroup.process_limit_hits() == 0 and cgroup.cpu_seconds() == 1.0
    assert len(opened) == 3, opened
    held = set(os.listdir("/proc/self/fd"))
    assert cgroup.remove() is False  # the fake folders hold files: not removed
    assert len(held - set(os.listdir("/proc/self/fd"))) == 3  # but the files are let go
