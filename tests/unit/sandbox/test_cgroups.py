"""Cgroup discovery and limits, on a fake cgroup tree (v1 and v2)."""

from __future__ import annotations

from pathlib import Path

from lmc_runtime.sandbox.cgroups import create_cgroup
from lmc_runtime.sandbox.policy import SessionLimits


def _v1_tree(tmp_path: Path) -> tuple[Path, Path]:
    lines = []
    for number, controller in enumerate(["memory", "pids", "cpuacct", "freezer"]):
        (tmp_path / controller / "mine").mkdir(parents=True)
        lines.append(
            f"{30 + number} 1 0:{number} / {tmp_path / controller} rw - cgroup cgroup rw,{controller}"
        )
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("\n".join(lines) + "\n")
    own = tmp_path / "self_cgroup"
    own.write_text("4:memory:/mine\n3:pids:/mine\n2:cpuacct:/mine\n1:freezer:/mine\n0::/\n")
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
    assert cgroup is not None and cgroup.version == 2 and how == "cgroup v2"
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
    assert cgroup is None and "no writable cgroup" in how
