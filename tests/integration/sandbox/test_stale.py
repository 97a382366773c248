"""Sandbox.start cleans a stale session folder (mount, cgroup, files) at its path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lmc_runtime.sandbox import Sandbox, SandboxPolicy
from lmc_runtime.sandbox.stale import mounts_under, stale_cgroups

from .conftest import needs_bwrap

pytestmark = [pytest.mark.anyio, needs_bwrap]


def _cgroup_dirs(name: str) -> set[Path]:
    return {path for group in stale_cgroups(name) for path in group.dirs.values()}


async def test_start_cleans_a_stale_mount_and_cgroup_at_its_path(tmp_path: Path) -> None:
    root = tmp_path / "stale-session"
    crashed = Sandbox(root, SandboxPolicy())
    await crashed.start()  # and never closed, as if the runtime had been killed
    (crashed.work_dir / "old.txt").write_text("from before")
    left_mounts, left_cgroups = mounts_under(root), _cgroup_dirs(root.name)
    if os.geteuid() == 0:
        assert left_mounts == [root / "disk"]

    fresh = Sandbox(root, SandboxPolicy())
    await fresh.start()
    try:
        assert len(mounts_under(root)) == len(left_mounts)  # the new one only
        assert not (fresh.work_dir / "old.txt").exists()
        assert not left_cgroups & _cgroup_dirs(root.name)
        (fresh.work_dir / "new.txt").write_text("works")
    finally:
        await fresh.aclose()
    assert mounts_under(root) == []
    assert _cgroup_dirs(root.name) == set()
