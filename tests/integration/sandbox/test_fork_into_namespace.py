"""The fork server forks each kernel straight into its sandbox's PID namespace
(``setns`` on the holder's pidfd, the fork, ``setns`` back): the kernel is born
in the sandbox's namespace and nothing else is, and a request with no holder, a
descriptor that is not a process, or a holder that has ended is refused while
the fork server serves on, its own children born in its own namespace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmc_runtime.errors import ForkFailed
from lmc_runtime.sandbox import Sandbox
from lmc_runtime.sandbox.forks import ForkServer

from .conftest import needs_bwrap
from .test_fork_server_reaps import _ended, _fork, _fork_server
from .test_fork_server_reaps import sandbox as sandbox  # the fixture: a sandbox with a fork server

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.integration,
    needs_bwrap,
    pytest.mark.skipif(not ForkServer.supported(), reason="kernels are forked by root only"),
]


def _namespace(pid: int, which: str = "pid") -> str:
    return os.readlink(f"/proc/{pid}/ns/{which}")


HOST = _namespace(os.getpid())


def _pid_of(pidfd: int) -> int:
    """The pid, in this process's namespace, of the process ``pidfd`` refers to."""
    for line in Path(f"/proc/self/fdinfo/{pidfd}").read_text().splitlines():
        if line.startswith("Pid:"):
            return int(line.split()[1])
    raise AssertionError(f"descriptor {pidfd} is not a pidfd")


async def _refused(forks: ForkServer, holder: int | None) -> str:
    """What the fork server says to a kernel's request with ``holder``."""
    out = os.open(os.devnull, os.O_WRONLY)
    try:
        request = {"argv": [sys.executable, "x.py"], "env": {}, "cwd": "/", "uid": 1, "gid": 1}
        with pytest.raises(ForkFailed) as failed:
            await forks._ask(b"k", request, [out, out], "kernel", holder)
    finally:
        os.close(out)
    return str(failed.value)


async def test_a_kernel_is_born_in_its_sandbox_and_the_fork_server_returns_to_its_own(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    kernel = await _fork(sandbox, tmp_path, "import time\ntime.sleep(600)\n")
    try:
        inside = _pid_of(kernel._init)  # the holder's process in the sandbox
        zygote = _fork_server(sandbox)
        assert _namespace(kernel.pid) == _namespace(inside) != HOST
        assert _namespace(kernel.pid, "pid_for_children") == _namespace(kernel.pid)
        # What the fork server forks next is born in the host's namespace. The
        # kernel names itself as soon as it can, maybe before the fork server has
        # set its namespace back: once it answers a later request, it has.
        forks = sandbox._forks
        assert forks is not None
        await _refused(forks, None)
        assert _namespace(zygote) == _namespace(zygote, "pid_for_children") == HOST
        for which in ("mnt", "net", "user", "ipc", "uts", "cgroup"):
            assert _namespace(kernel.pid, which) == _namespace(inside, which)
            assert _namespace(zygote, which) == _namespace(os.getpid(), which)
    finally:
        kernel.send_signal(9)
        await _ended(kernel)


@pytest.mark.parametrize("holder", ["none", "a pipe", "an ended process"])
async def test_a_kernel_request_without_a_live_holder_is_refused_and_the_fork_server_serves_on(
    sandbox: Sandbox, tmp_path: Path, holder: str
) -> None:
    forks = sandbox._forks
    assert forks is not None
    zygote = await forks.pid()
    if holder == "none":
        said = await _refused(forks, None)
        assert "with a holder" in said
    elif holder == "a pipe":
        read, write = os.pipe()
        try:
            said = await _refused(forks, read)
        finally:
            os.close(read)
            os.close(write)
        assert "could not fork" in said and "setns" in said
    else:
        ended = subprocess.Popen(["true"])
        pidfd = os.pidfd_open(ended.pid)
        ended.wait()
        try:
            said = await _refused(forks, pidfd)
        finally:
            os.close(pidfd)
        assert "could not fork" in said
    # The same fork server, in its own namespace, forks the next kernel.
    assert _fork_server(sandbox) == zygote
    assert _namespace(zygote, "pid_for_children") == HOST
    kernel = await _fork(sandbox, tmp_path, "import os\nos._exit(3)\n")
    assert await _ended(kernel) == 3
