"""Process helpers where Linux's /proc and pidfds are not there (forced off here):
the answers must be those the Linux paths give."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest

from lmc_runtime import procs


@pytest.fixture(params=["linux", "portable"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "portable":
        monkeypatch.setenv(procs.PORTABLE, "1")
        assert not procs.linux_procfs()
    elif not procs.linux_procfs():
        pytest.skip("no Linux /proc here")
    return str(request.param)


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )


def test_stat_and_session_members_find_a_session_s_process(mode: str) -> None:
    child = _sleeper()
    try:
        state, group, session = procs.proc_stat(child.pid) or ("?", 0, 0)
        assert (group, session) == (child.pid, child.pid) and state != "Z"
        assert procs.session_members(child.pid) == [child.pid]
        procs.kill_session(child.pid)
        assert child.wait(timeout=30) == -9
        assert procs.session_members(child.pid) == []
    finally:
        child.kill()
        child.wait()


def test_a_zombie_is_not_a_member(mode: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped
    try:
        assert procs.session_members(child.pid) == []
    finally:
        child.wait()


def test_wait_for_exit_returns_when_the_process_ends(mode: str) -> None:
    child = _sleeper()

    async def main() -> None:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(procs.wait_for_exit, child.pid, child.wait)
                child.kill()

    try:
        anyio.run(main)
    finally:
        child.kill()
    assert child.wait(timeout=5) == -9


def test_a_gone_process_has_no_stat(mode: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert procs.proc_stat(child.pid) is None


def test_nonblocking_pipe_is_not_inherited_and_does_not_block() -> None:
    read, write = procs.nonblocking_pipe()
    try:
        assert not os.get_inheritable(read) and not os.get_inheritable(write)
        assert not os.get_blocking(read) and os.get_blocking(write)
        assert procs.read_available(read) == b""
    finally:
        os.close(read)
        os.close(write)
