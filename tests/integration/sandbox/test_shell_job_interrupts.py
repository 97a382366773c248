"""A sandboxed shell's job that missed its interrupt gets it again, and one killed for
ignoring it is the last command the cell runs: the host finds the job's processes
and their signal dispositions through the sandbox (the same tests outside one are in
``tests/integration/backends/test_shell_interrupts.py``)."""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.messages import Message
from lmc_runtime.sandbox import Sandbox, SandboxPolicy

from .conftest import needs_bwrap, run, text

pytestmark = [pytest.mark.anyio, pytest.mark.integration, needs_bwrap]

_MISSES_ONE = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, lambda *_: signal.signal(signal.SIGINT, signal.SIG_DFL))\n"
    "print('started', flush=True)\n"
    "time.sleep(300)\n"
)
_IGNORES = "sh -c 'trap \"\" INT; echo started; sleep 100'"


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    started = Sandbox(tmp_path / "s", SandboxPolicy())
    await started.start()
    try:
        yield started
    finally:
        await started.aclose()


async def _interrupted(computer: Computer, job: str) -> list[Message]:
    """``job`` between two assignments of ``state``, interrupted once it started."""
    messages: list[Message] = []
    async for message in computer.arun("shell", f"state=running; {job}; state=finished"):
        messages.append(message)
        if message.format == "output" and "started" in str(message.content):
            await computer.ainterrupt()
    return messages


@pytest.mark.parametrize(
    ("job", "grace", "killed"),
    [
        (f"python3 -c {shlex.quote(_MISSES_ONE)}", 10.0, False),
        (_IGNORES, 1.0, True),
    ],
    ids=["missed", "ignored"],
)
async def test_a_sandboxed_job_stops_where_it_was_interrupted(
    sandbox: Sandbox, job: str, grace: float, killed: bool
) -> None:
    async with sandbox.computer(timeouts=Timeouts(interrupt_grace=grace)) as computer:
        messages = await _interrupted(computer, job)
        final = messages[-1].extras or {}
        assert final.get("status") == "interrupted", messages
        assert ("foreground job was killed" in text(messages)) is killed, messages
        assert text(await run(computer, "echo $state", "shell")) == "running\n"
