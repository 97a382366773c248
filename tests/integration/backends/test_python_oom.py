"""A kernel killed by the real out-of-memory killer is reported and restarted.

The kernel is moved into a child memory cgroup (v1 or v2) with a 150 MB limit,
then allocates past it. Where no memory cgroup is writable the test is skipped
and says why; test_python_recovery covers SIGKILL itself everywhere.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer

from ..conftest import run

LIMIT = 150 * 1024 * 1024


def _memory_cgroup() -> tuple[Path, str] | None:
    """A writable memory cgroup directory of this process, and its limit file."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            candidate = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
            limit_file = "memory.limit_in_bytes"
        elif controllers == "":
            root = Path("/sys/fs/cgroup")
            if not (root / "cgroup.controllers").exists():
                root = root / "unified"
            candidate = root / path.lstrip("/")
            limit_file = "memory.max"
            controllers_file = candidate / "cgroup.controllers"
            if not controllers_file.exists() or "memory" not in controllers_file.read_text():
                continue
        else:
            continue
        probe = candidate / f"lmc-probe-{uuid.uuid4().hex[:8]}"
        try:
            probe.mkdir()
            (probe / limit_file).write_text(str(LIMIT))
        except OSError:
            with contextlib.suppress(OSError):
                probe.rmdir()
            continue
        probe.rmdir()
        return candidate, limit_file
    return None


@pytest.fixture
def oom_cgroup() -> Iterator[Path]:
    found = _memory_cgroup()
    if found is None:
        pytest.skip("no writable memory cgroup on this machine to provoke a real OOM kill")
    parent, limit_file = found
    group = parent / f"lmc-oom-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    (group / limit_file).write_text(str(LIMIT))
    try:
        yield group
    finally:
        with contextlib.suppress(OSError):
            group.rmdir()


def test_a_real_oom_kill_is_reported_and_the_kernel_restarts(oom_cgroup: Path) -> None:
    with Computer() as computer:
        moved = run(
            computer,
            f"import os\nopen({str(oom_cgroup / 'cgroup.procs')!r}, 'w').write(str(os.getpid()))",
        )
        assert moved.status == "ok", moved.output
        result = run(computer, "hog = bytearray(600 * 1024 * 1024)\nprint('survived')")
        assert result.status == "kernel_died"
        assert "SIGKILL" in result.output and "out-of-memory" in result.output
        assert "survived" not in result.output
        assert run(computer, "print('back')").output == "back\n"
