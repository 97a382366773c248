"""A session's census on a server with no cgroup: the processes under this one
whose command line names the session's folder, children and grandchildren."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime.sandbox import strays
from lmc_runtime.sandbox.strays import TreeCensus

#: A child that starts a grandchild and waits; both live until killed.
_TREE = (
    "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; time.sleep(60)'])"
)


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen([sys.executable, "-c", _TREE, str(tmp_path)])
    try:
        yield child
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(child.pid)], check=False)
        child.kill()
        child.wait()


def _grandchild(census: TreeCensus, child: int) -> int:
    """The grandchild's pid, once the census sees it (bounded)."""
    for _ in range(500):
        members = census.members()
        found = [pid for pid, (ppid, _) in members.items() if ppid == child]
        if found:
            assert child in members
            return found[0]
        os.sched_yield()
        subprocess.run(["true"], check=False)  # a moment, on an observable step
    raise AssertionError("the grandchild never showed up in the census")


@pytest.mark.parametrize("children_files", [True, False])
def test_the_census_finds_the_session_s_tree_and_nothing_else(
    tmp_path: Path,
    tree: subprocess.Popen[bytes],
    children_files: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: the census read every process of the host, for every run (0.44 ms
    with 67 processes, growing with the host): it walks down from the server now,
    and falls back to the whole table only where Linux has no ``children`` files."""
    if not children_files:
        monkeypatch.setattr(strays, "_has_children_files", lambda: False)
    whole_tables: list[None] = []
    real_table = strays.proc_table

    def table(pids: object = None) -> dict[int, tuple[int, int]]:
        if pids is None:
            whole_tables.append(None)
        return real_table(pids)  # type: ignore[arg-type]

    monkeypatch.setattr(strays, "proc_table", table)
    census = TreeCensus(tmp_path)
    grandchild = _grandchild(census, tree.pid)
    assert set(census.members()) >= {tree.pid, grandchild}
    assert os.getpid() not in census.members()
    assert TreeCensus(tmp_path / "other").members() == {}
    assert bool(whole_tables) is not children_files  # the host's whole table, only as a fallback
