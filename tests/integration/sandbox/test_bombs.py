"""Each bomb is contained with a typed message, and a second sandboxed session stays healthy."""

from __future__ import annotations

import anyio
import pytest

from lmc_runtime import Computer, Message
from lmc_runtime.sandbox import SandboxPolicy, SessionLimits

from .conftest import Opener, needs_bwrap, run, statuses, text

pytestmark = [pytest.mark.anyio, pytest.mark.integration, needs_bwrap]


def final_status(messages: list[Message]) -> object:
    return (messages[-1].extras or {}).get("status")


async def healthy(computer: Computer) -> None:
    out = await run(computer, "print(6 * 7)")
    assert "42" in text(out) and final_status(out) == "ok", out


async def bomb(opener: Opener, limits: SessionLimits, code: str) -> list[Message]:
    """Run ``code`` in one session while another one runs beside it; both must recover."""
    async with opener() as (_, other), opener(SandboxPolicy(limits=limits)) as (_, session):
        await healthy(other)
        messages = await run(session, code)
        await healthy(other)
        await healthy(session)
    return messages


async def test_python_fork_bomb_hits_the_process_limit(sandboxed: Opener) -> None:
    code = "import os\nwhile True:\n    os.fork()\n"
    out = await bomb(sandboxed, SessionLimits(processes=48), code)
    assert "process_limit" in statuses(out), out
    assert final_status(out) == "process_limit"
    assert out[-1].extras and out[-1].extras.get("state_lost") is True


async def test_a_huge_allocation_is_a_memory_limit(sandboxed: Opener) -> None:
    out = await bomb(sandboxed, SessionLimits(), "a = bytearray(10**11)")
    assert "memory_limit" in statuses(out) and "MemoryError" in text(out), out


async def test_touching_more_than_the_memory_limit_is_a_memory_limit(sandboxed: Opener) -> None:
    code = "a = bytearray(700 << 20)"  # zero-filled: every page is touched
    out = await bomb(sandboxed, SessionLimits(memory_bytes=256 << 20), code)
    assert "memory_limit" in statuses(out), out


async def test_filling_the_disk_is_a_disk_limit(sandboxed: Opener) -> None:
    code = """
chunk = b"x" * (1 << 20)
try:
    with open("fill.bin", "wb") as f:
        while True:
            f.write(chunk)
            f.flush()
except OSError as exc:
    print("STOPPED", exc.errno)
"""
    limits = SessionLimits(disk_bytes=16 << 20, file_size_bytes=64 << 20)
    out = await bomb(sandboxed, limits, code)
    assert "STOPPED" in text(out) and "disk_limit" in statuses(out), out


async def test_a_file_past_the_size_limit_is_a_file_size_limit(sandboxed: Opener) -> None:
    code = 'open("big.bin", "wb").write(b"x" * (3 << 20))'
    out = await bomb(sandboxed, SessionLimits(file_size_bytes=1 << 20), code)
    assert "file_size_limit" in statuses(out), out


async def test_a_busy_loop_hits_the_cpu_limit(sandboxed: Opener) -> None:
    out = await bomb(sandboxed, SessionLimits(cpu_seconds=1.0), "x = 5\nwhile True: pass")
    assert "cpu_limit" in statuses(out) and final_status(out) == "cpu_limit", out
    assert out[-1].extras and out[-1].extras.get("state_lost") is False


async def test_a_busy_loop_hits_the_wall_limit(sandboxed: Opener) -> None:
    code = "import time\nwhile True: time.sleep(0.05)"
    out = await bomb(sandboxed, SessionLimits(wall_seconds=1.0), code)
    assert "timeout" in statuses(out), out


async def test_printing_a_gigabyte_is_truncated(sandboxed: Opener) -> None:
    code = 'line = "x" * 1023\nfor _ in range(1 << 20):\n    print(line)'
    out = await bomb(sandboxed, SessionLimits(output_bytes=10_000), code)
    assert "truncated" in statuses(out), statuses(out)
    assert sum(len(str(m.content)) for m in out) < 50_000


async def test_shell_fork_bomb_hits_the_process_limit(sandboxed: Opener) -> None:
    limits = SessionLimits(processes=48, wall_seconds=30)
    async with sandboxed() as (_, other), sandboxed(SandboxPolicy(limits=limits)) as (_, session):
        # The bomb puts itself in the background, so the limit may be hit after its own
        # run has ended: a later run reports it. Regression: one later run was assumed to
        # be enough, and on a fast machine it ended before the bomb had grown.
        # Either the pids limit stops it, or the shell dies under it first and is restarted.
        wanted = {"process_limit", "kernel_died", "restarted"}
        runs = [await run(session, ":(){ :|:& };:", "shell")]
        with anyio.fail_after(90):
            while not wanted & set(statuses(runs[-1])):
                runs.append(await run(session, "echo after", "shell"))
        await healthy(other)
        out = await run(session, "echo fine", "shell")
        assert "fine" in text(out) and final_status(out) == "ok", out


async def test_without_bubblewrap_the_limits_still_apply(sandboxed: Opener) -> None:
    limits = SessionLimits(file_size_bytes=1 << 20)
    async with sandboxed(SandboxPolicy(limits=limits), enabled=False) as (sandbox, session):
        out = await run(session, 'open("big.bin", "wb").write(b"x" * (3 << 20))')
        assert "file_size_limit" in statuses(out), out
        assert not sandbox.usage().sandboxed
        await healthy(session)
