"""benchmarks.load.census: what a leak report names, on this process's own tree."""

from __future__ import annotations

import os
import subprocess

from benchmarks.load.census import CensusTarget, describe_processes, take_census

#: A cgroup prefix no session has: only the process tree counts.
_NONE = "lmc-no-such-replica-"


def test_the_processes_a_census_counts_are_named_by_their_command_lines() -> None:
    child = subprocess.Popen(["/bin/sleep", "30"])  # a path, shown by its last part
    try:
        # The sleep stands for a server: the server itself is not named.
        assert describe_processes(CensusTarget(child.pid, cgroup_prefix=_NONE)) == []
        this = CensusTarget(os.getpid(), cgroup_prefix=_NONE)
        named = describe_processes(this)
        assert "sleep 30" in named
        assert len(named) == take_census(this).processes
    finally:
        child.kill()
        child.wait()
