"""The fork server reaps and reports the kernels it forks (and their
sandboxes' holders, which it starts): no process stays per kernel but the kernel (a resident Python process of its own for every session), yet
a kernel's end is reported as before (its exit code, or the signal that killed
it), a kernel the runtime gives up is killed, and a fork server that ends takes
its kernels with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from lmc_runtime.errors import ForkFailed
from lmc_runtime.sandbox import Sandbox, SandboxPolicy
from lmc_runtime.sandbox.forked import ForkedKernel
from lmc_runtime.sandbox.forks import ForkServer

from .conftest import needs_bwrap

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.integration,
    needs_bwrap,
    pytest.mark.skipif(not ForkServer.supported(), reason="kernels are forked by root only"),
]

_ENDS = 30.0


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    forks = ForkServer()
    box = Sandbox(tmp_path / "s", SandboxPolicy(), forks=forks)
    await box.start()
    try:
        yield box
    finally:
        await box.aclose()
        await forks.aclose()


async def _fork(box: Sandbox, tmp_path: Path, code: str) -> ForkedKernel:
    """``python -c code``, as a script in the session's folder, forked into its sandbox."""
    script = box.work_dir / "kernel_script.py"
    script.write_text(code)
    os.chmod(script, 0o644)
    log = os.open(tmp_path / "kernel.log", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        kernel = await box.launcher.fork(
            [sys.executable, str(script)],
            env={"PATH": "/usr/bin:/bin"},
            cwd=str(box.work_dir),
            stdout=log,
            stderr=log,
        )
    finally:
        os.close(log)
    assert kernel is not None, "the kernel was not forked"
    return kernel


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _fork_server(box: Sandbox) -> int:
    forks = box._forks
    assert forks is not None and forks._process is not None
    return forks._process.pid


async def _ended(kernel: ForkedKernel) -> int:
    with anyio.fail_after(_ENDS):
        await kernel.ended()
    assert kernel.returncode is not None
    return kernel.returncode


async def test_regression_no_process_stays_between_the_fork_server_and_its_kernel(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    kernel = await _fork(sandbox, tmp_path, "import time\ntime.sleep(600)\n")
    try:
        zygote = _fork_server(sandbox)
        holder = kernel._holder
        assert holder is not None
        starter = sandbox._forks._starter if sandbox._forks else None
        assert starter is not None
        # The kernel, and the fork server's starter, the parent of the bwrap its
        # sandbox's holder runs in (see test_holder_chain.py). The kernel is forked
        # straight into its sandbox, a child of the fork server's, and nothing else
        # is (a clean CI run once listed a process that forked it, a zombie).
        expected = sorted([kernel.pid, starter])
        with anyio.move_on_after(_ENDS):
            while _parent(kernel.pid) != zygote or _children(zygote) != expected:
                await anyio.sleep(0.02)
        assert _parent(kernel.pid) == zygote
        assert _children(zygote) == expected, _described(_children(zygote))
        assert _children(starter) == [holder.pid], _described(_children(starter))
        assert Path(f"/proc/{holder.pid}/exe").resolve().name == "bwrap"
    finally:
        kernel.send_signal(signal.SIGKILL)
        await _ended(kernel)


def _children(parent: int) -> list[int]:
    return sorted(
        int(entry)
        for entry in os.listdir("/proc")
        if entry.isdigit() and _parent_or_none(int(entry)) == parent
    )


def _described(pids: list[int]) -> list[str]:
    """Each process's state and command line, for a failure's message."""
    described = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            state, argv = "gone", ""
        described.append(f"{pid} {state} {argv}")
    return described


def _parent_or_none(pid: int) -> int | None:
    try:
        return _parent(pid)
    except (OSError, IndexError, ValueError):
        return None


async def test_a_kernels_exit_code_is_reported(sandbox: Sandbox, tmp_path: Path) -> None:
    kernel = await _fork(sandbox, tmp_path, "raise SystemExit(3)\n")
    assert await _ended(kernel) == 3


async def test_a_kernel_killed_by_a_signal_is_reported_so(sandbox: Sandbox, tmp_path: Path) -> None:
    kernel = await _fork(sandbox, tmp_path, "import os, signal\nos.kill(os.getpid(), 15)\n")
    assert await _ended(kernel) == -signal.SIGTERM


async def test_a_kernel_that_ends_at_once_is_reported(sandbox: Sandbox, tmp_path: Path) -> None:
    """Reaped, perhaps, before its word that names it was read."""
    for code in range(5):
        kernel = await _fork(sandbox, tmp_path, f"import os\nos._exit({code})\n")
        assert await _ended(kernel) == code


async def test_a_kernel_the_runtime_gives_up_is_killed(sandbox: Sandbox, tmp_path: Path) -> None:
    kernel = await _fork(sandbox, tmp_path, "import time\ntime.sleep(600)\n")
    pid = kernel.pid
    pidfd = os.pidfd_open(pid)
    try:
        kernel._report.close()  # the runtime's end of the kernel's connection
        with anyio.fail_after(_ENDS):
            await anyio.wait_readable(pidfd)  # the kernel has ended
    finally:
        os.close(pidfd)


async def test_a_fork_server_that_ends_takes_its_kernels(sandbox: Sandbox, tmp_path: Path) -> None:
    """Its kernels, its starter, and the sandboxes' holders the starter started."""
    kernel = await _fork(sandbox, tmp_path, "import time\ntime.sleep(600)\n")
    forks = sandbox._forks
    assert forks is not None and forks._process is not None and forks._starter is not None
    holder = kernel._holder
    assert holder is not None
    pidfds = [os.pidfd_open(forks._starter), os.pidfd_open(holder.pid)]
    try:
        process: subprocess.Popen[bytes] = forks._process
        process.kill()
        with anyio.fail_after(_ENDS):
            await kernel.ended()
            for pidfd in pidfds:
                await anyio.wait_readable(pidfd)  # it has ended
    finally:
        for pidfd in pidfds:
            os.close(pidfd)
    assert kernel.returncode == -signal.SIGKILL


async def test_the_starter_is_small_and_started_before_the_kernels_imports(
    sandbox: Sandbox,
) -> None:
    """A holder is a fork of the starter, not of the fork server: a fork of the
    fork server would copy its page tables and tear them down again as it
    becomes bwrap."""
    forks = sandbox._forks
    assert forks is not None
    zygote, starter = await forks.pid(), await forks.parent()
    assert _parent(starter) == zygote

    def status(pid: int) -> dict[str, str]:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        return dict(line.split(":", 1) for line in lines if ":" in line)

    def kib(pid: int) -> int:
        return int(status(pid)["VmRSS"].split()[0])

    assert int(status(starter)["Threads"]) == 1
    assert kib(starter) * 3 < kib(zygote), (kib(starter), kib(zygote))
    maps = Path(f"/proc/{starter}/maps").read_text()
    assert "zmq" not in maps and "_cffi_backend" not in maps  # no kernel's imports


async def test_a_fork_server_whose_starter_is_gone_refuses_processes_and_serves_on(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """A holder it started itself could not name the starter as the parent it
    dies with: the fork server says why, and kernels start the usual way."""
    forks = sandbox._forks
    assert forks is not None
    zygote, starter = await forks.pid(), await forks.parent()
    pidfd = os.pidfd_open(starter)
    try:
        os.kill(starter, signal.SIGKILL)
        with anyio.fail_after(_ENDS):
            await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)
    null = os.open(os.devnull, os.O_RDWR)
    try:
        argv = [sys.executable, "-I", "-S", "_exec.py", "--", "true"]
        with pytest.raises(ForkFailed, match="starter took no process"):
            await forks.start(argv, {}, "/", {0: null, 1: null, 2: null})
    finally:
        os.close(null)
    assert await forks.pid() == zygote  # the same fork server, serving on
    launcher = sandbox.launcher
    kernel = await launcher.fork(
        [sys.executable, str(sandbox.work_dir / "k.py")],
        env={},
        cwd=str(sandbox.work_dir),
        stdout=1,
        stderr=2,
    )
    assert kernel is None  # started the usual way by the caller
