"""LmcProvisioner on real processes: its log, its exit, its group and its session."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from lmc_runtime.backends.jupyter.provisioner import LmcProvisioner
from lmc_runtime.procs import proc_stat

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _until(condition: Callable[[], bool], what: str) -> None:
    """Bounded: wait until ``condition`` holds, looking again every few milliseconds."""
    with anyio.move_on_after(10):
        while not condition():
            await anyio.sleep(0.005)
    assert condition(), f"{what} did not come within 10 s"


def _gone(pid: int) -> bool:
    found = proc_stat(pid)
    return found is None or found[0] == "Z"


async def _launch(tmp_path: Path, script: str) -> LmcProvisioner:
    provisioner = LmcProvisioner(kernel_id="k", kernel_spec=None, parent=None)
    with open(tmp_path / "kernel.log", "ab") as log:
        await provisioner.launch_kernel(
            [sys.executable, "-c", script],
            cwd=str(tmp_path),
            env=dict(os.environ),
            stdout=log,
            stderr=log,
        )
    assert provisioner.has_process
    return provisioner


async def test_output_goes_where_the_launch_says_and_wait_reaps_with_the_exit_code(
    tmp_path: Path,
) -> None:
    script = "import sys; print('out', flush=True); print('err', file=sys.stderr); sys.exit(3)"
    provisioner = await _launch(tmp_path, script)
    with anyio.fail_after(10):
        assert await provisioner.wait() == 3
    assert not provisioner.has_process
    assert await provisioner.poll() == 3
    assert await provisioner.wait() == 3, "waiting again gives the same answer"
    assert (tmp_path / "kernel.log").read_text().split() == ["out", "err"]


async def test_the_kernel_runs_in_a_session_and_group_of_its_own(tmp_path: Path) -> None:
    provisioner = await _launch(tmp_path, "import time; time.sleep(60)")
    found = proc_stat(provisioner.pid)
    assert found is not None and found[1] == found[2] == provisioner.pid
    await provisioner.send_signal(signal.SIGTERM)
    with anyio.fail_after(10):
        assert await provisioner.wait() == -signal.SIGTERM


async def test_kill_ends_the_group_and_what_left_it(tmp_path: Path) -> None:
    """A child in a process group of its own (same session) is ended too."""
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " process_group=0)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    provisioner = await _launch(tmp_path, script)
    log = tmp_path / "kernel.log"
    await _until(lambda: log.read_text().strip() != "", "the child's pid")
    child = int(log.read_text())
    found = proc_stat(child)
    assert found is not None and found[1] != provisioner.pid, "the child left the group"
    await provisioner.kill()
    with anyio.fail_after(10):
        assert await provisioner.wait() == -signal.SIGKILL
    await _until(lambda: _gone(child), "the end of the child")
