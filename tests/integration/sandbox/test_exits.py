"""How a sandboxed process ended reaches the host as it was: a death by signal N is
that signal, not bwrap's exit status 128+N; and stopping a sandboxed shell stops
its code, never the shell."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lmc_runtime.backends import Registry
from lmc_runtime.sandbox import Sandbox, SandboxPolicy
from lmc_runtime.sandbox._exec import STATUS_FD
from lmc_runtime.sandbox.launch import EXEC_WRAPPER

from .conftest import Opener, needs_bwrap, run, statuses, text

pytestmark = [pytest.mark.anyio, pytest.mark.integration, needs_bwrap]


@pytest.fixture(params=[False, True], ids=["offline", "network"])
async def sandbox(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    """A started sandbox, without and with the network (whose helper sits above bwrap)."""
    started = Sandbox(tmp_path / "s", SandboxPolicy(network=request.param))
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


@pytest.mark.parametrize("named", [None, "not-a-number", "999"])
def test_the_wrapper_without_a_descriptor_to_report_on_runs_the_command(
    named: str | None,
) -> None:
    """``--report`` with no (or no usable) descriptor named is a plain exec; the name is
    never passed on."""
    env = {"PATH": "/usr/bin:/bin"} | ({STATUS_FD: named} if named is not None else {})
    argv = [sys.executable, "-I", "-S", str(EXEC_WRAPPER), "--report", "--", "sh", "-c"]
    script = 'echo "[${LMC_SANDBOX_STATUS_FD-unset}]"; exit 5'
    done = subprocess.run([*argv, script], env=env, capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (5, b"[unset]\n"), done.stderr


async def test_every_interrupt_of_a_shell_loop_stops_it(sandboxed: Opener) -> None:
    """Regression: bash loses an interrupt that lands while its DEBUG trap runs (a few
    in a hundred): the shell itself is interrupted again until the run ends."""
    async with sandboxed() as (_, computer):
        await run(computer, "KEPT=kept-value", "shell")
        for attempt in range(40):
            messages = []
            async for message in computer.arun("shell", "echo started\nwhile :; do :; done"):
                messages.append(message)
                if message.format == "output" and "started" in str(message.content):
                    await computer.ainterrupt()
            final = messages[-1].extras or {}
            assert final.get("status") == "interrupted", (attempt, messages)
            assert final.get("state_lost") is False, (attempt, messages)
        after = await run(computer, 'echo "$KEPT"', "shell")
        assert text(after) == "kept-value\n", after
