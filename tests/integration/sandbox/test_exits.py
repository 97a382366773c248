"""How a sandboxed process ended reaches the host as it was: a death by signal N is
that signal, not bwrap's exit status 128+N; and stopping a sandboxed shell stops
its code, never the shell."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lmc_runtime.backends import Registry
from lmc_runtime.sandbox import Sandbox, SandboxPolicy

from .conftest import Opener, needs_bwrap, run, statuses, text

pytestmark = [pytest.mark.anyio, pytest.mark.integration, needs_bwrap]


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    started = Sandbox(tmp_path / "s", SandboxPolicy())
    await started.start()
    try:
        yield started
    finally:
        await started.aclose()


def _returncode(sandbox: Sandbox, script: str) -> int:
    argv = sandbox.launcher.wrap(["sh", "-c", script])
    return subprocess.run(argv, timeout=60, check=False, cwd=sandbox.work_dir).returncode


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV])
async def test_a_death_by_signal_is_reported_as_that_signal(
    sandbox: Sandbox, signum: signal.Signals
) -> None:
    """Regression: bwrap ends with 128+N, so a SIGKILL came out as "exit code 137"."""
    assert _returncode(sandbox, f"kill -{signum.name[3:]} $$") == -signum


@pytest.mark.parametrize("code", [0, 3, 137, 255])
async def test_an_exit_status_is_reported_as_that_status(sandbox: Sandbox, code: int) -> None:
    """Exit status 137 stays an exit status: the truth comes from inside, not the number."""
    assert _returncode(sandbox, f"exit {code}") == code


async def test_the_sandboxed_process_does_not_see_the_status_descriptor(
    sandbox: Sandbox,
) -> None:
    argv = sandbox.launcher.wrap(
        ["sh", "-c", 'echo "[${LMC_SANDBOX_STATUS_FD-unset}]"; ls /proc/self/fd']
    )
    done = subprocess.run(argv, capture_output=True, timeout=60, check=False, cwd=sandbox.work_dir)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().split()
    assert lines[0] == "[unset]"
    assert sorted(lines[1:]) == ["0", "1", "2", "3"]  # stdio and the listing's own


async def test_a_sandboxed_python_killed_by_its_code_is_reported_killed(
    sandboxed: Opener,
) -> None:
    async with sandboxed() as (_, computer):
        messages = await run(computer, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        assert "kernel_died" in statuses(messages)
        assert "SIGKILL" in text(messages), text(messages)
        assert "137" not in text(messages), text(messages)


_SHELLS = ["shell", "sh", "zsh"]
_STUCK = {
    "busy-loop": "while :; do :; done",
    "sleep": "sleep 600",
    "loop-of-commands": "while :; do /bin/true; done",
}


@pytest.mark.parametrize("language", _SHELLS)
@pytest.mark.parametrize("kind", list(_STUCK))
async def test_stopping_a_sandboxed_shell_keeps_the_shell(
    sandboxed: Opener, language: str, kind: str
) -> None:
    """Regression: the shell is not the host's child in a sandbox, and its own process
    group was taken for a job's: a busy loop's timeout killed it (status 137)."""
    found = Registry().availability(language)
    if not found.available:
        pytest.skip(f"{language}: {found.reason}")
    async with sandboxed() as (_, computer):
        await run(computer, "KEPT=kept-value", language)
        stopped = [
            m async for m in computer.arun(language, f"echo started\n{_STUCK[kind]}", timeout=1)
        ]
        final = stopped[-1].extras or {}
        assert final.get("status") == "timeout", stopped
        assert final.get("state_lost") is False, stopped
        after = await run(computer, 'echo "$KEPT"', language)
        assert text(after) == "kept-value\n", after
        assert statuses(after)[-1] == "ok", after
