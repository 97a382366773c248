"""The supervisor between a backend and bwrap: a sandboxed process lives exactly as long
as the runtime process that started it, whichever of its threads started it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lmc_runtime.sandbox import Sandbox, SandboxPolicy

from .conftest import needs_bwrap

pytestmark = [pytest.mark.anyio, pytest.mark.integration, needs_bwrap]


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    started = Sandbox(tmp_path / "s", SandboxPolicy())
    await started.start()
    try:
        yield started
    finally:
        await started.aclose()


def _sleeping(marker: str) -> bool:
    """Whether the sandboxed ``sleep marker`` itself runs (not a wrapper naming it)."""
    for pid in _processes_mentioning(marker):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "sleep":
                return True
        except OSError:
            continue
    return False


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if text.encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def _described(text: str) -> list[str]:
    found = []
    for pid in _processes_mentioning(text):
        try:
            found.append(Path(f"/proc/{pid}/stat").read_text()[:80])
        except OSError:
            continue
    return found


def _wait_until(condition: object, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.05)


async def test_sandboxed_process_outlives_the_thread_that_started_it(sandbox: Sandbox) -> None:
    """Regression: bwrap --die-with-parent follows the starting *thread*; a shell spawned
    from a worker thread was SIGKILLed when anyio retired that thread."""
    argv = sandbox.launcher.wrap(["cat"])
    started: list[subprocess.Popen[bytes]] = []
    thread_ids: list[int] = []
    running = threading.Event()

    def spawn() -> None:
        thread_ids.append(threading.get_native_id())
        started.append(
            subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=sandbox.work_dir
            )
        )
        # The thread ends only once bwrap is up (as a retired worker thread would).
        running.wait(60)

    def echo(process: subprocess.Popen[bytes], line: bytes) -> bytes:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(line)
        process.stdin.flush()
        return process.stdout.readline()

    worker = threading.Thread(target=spawn)
    worker.start()
    _wait_until(lambda: bool(started), "the process did not start")
    (process,) = started
    try:
        assert echo(process, b"up\n") == b"up\n"
        running.set()
        worker.join(30)
        _wait_until(
            lambda: not Path(f"/proc/self/task/{thread_ids[0]}").exists(),
            "the starting thread did not end",
        )
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=2)  # before the fix it was killed at once
        assert echo(process, b"still here\n") == b"still here\n"
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        running.set()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


async def test_exit_code_and_forwarded_sigterm(sandbox: Sandbox) -> None:
    done = subprocess.run(sandbox.launcher.wrap(["sh", "-c", "exit 7"]), timeout=60, check=False)
    assert done.returncode == 7
    marker = "1000.271828"
    process = subprocess.Popen(sandbox.launcher.wrap(["sleep", marker]))
    try:
        _wait_until(lambda: _sleeping(marker), "no sleep seen")
        process.terminate()
        assert process.wait(timeout=30) == -signal.SIGTERM
        _wait_until(lambda: not _processes_mentioning(marker), "sleep survived")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


# The holder stands for the runtime: the supervisor watches the pid it is given.
_HOLDER = """
import json, os, subprocess, sys
argv = [str(os.getpid()) if arg == "RUNTIME-PID" else arg for arg in json.loads(sys.argv[1])]
child = subprocess.Popen(argv)
print(child.pid, flush=True)
sys.stdin.read()
"""


async def test_sandbox_ends_when_the_runtime_is_killed(sandbox: Sandbox) -> None:
    """SIGKILL of the process that started a sandbox (the server) takes the sandbox down."""
    marker = "1000.314159"
    argv = sandbox.launcher.wrap(["sleep", marker])
    argv[argv.index("--supervise") + 1] = "RUNTIME-PID"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, json.dumps(argv)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip().isdigit()
        _wait_until(lambda: _sleeping(marker), "no sleep seen")
        holder.kill()
        holder.wait(timeout=30)
        _wait_until(lambda: not _processes_mentioning(marker), "the sandbox outlived its runtime")
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)


async def test_supervisor_refuses_to_start_once_its_runtime_is_gone(sandbox: Sandbox) -> None:
    """Regression: a runtime killed while a kernel started left that kernel orphaned."""
    argv = sandbox.launcher.wrap(["sleep", "1000.161803"])
    argv[argv.index("--supervise") + 1] = "1"  # not the parent: as if the runtime had died
    done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    assert done.returncode == 127
    assert b"has ended" in done.stderr
    assert not _processes_mentioning("1000.161803")
