"""The async forms: ``afork``, ``acheckpoint`` while a run is under way (it waits
for the run), ``arollback`` during one (the run ends, restarted)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from lmc_runtime import Computer, Message

pytestmark = pytest.mark.anyio

#: Bounds every test's waits.
_GUARD = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _output(computer: Computer, code: str) -> tuple[str, list[Message]]:
    messages = [m async for m in computer.arun("python", code)]
    text = "".join(m.content for m in messages if m.format == "output" and m.content)
    return text, messages


async def test_afork_gives_an_open_computer_with_the_state(tmp_path: Path) -> None:
    with anyio.fail_after(_GUARD):
        async with Computer(cwd=tmp_path) as computer:
            await _output(computer, "shared = {'n': 1}")
            fork = await computer.afork()
            try:
                await _output(fork, "shared['n'] = 2")
                assert (await _output(fork, "print(shared)"))[0] == "{'n': 2}\n"
                assert (await _output(computer, "print(shared)"))[0] == "{'n': 1}\n"
            finally:
                await fork.aclose()
            assert computer.checkpoints() == []  # the fork's own checkpoint is gone


async def _started(computer: Computer, code: str, started: anyio.Event) -> list[Message]:
    """Run ``code``; set ``started`` at its first output."""
    messages = []
    async for message in computer.arun("python", code):
        messages.append(message)
        if message.format == "output":
            started.set()
    return messages


async def test_a_checkpoint_waits_for_the_run_under_way(tmp_path: Path) -> None:
    with anyio.fail_after(_GUARD):
        async with Computer(cwd=tmp_path) as computer:
            await _output(computer, "import time\nsteps = [1]")
            started = anyio.Event()
            async with anyio.create_task_group() as group:
                code = "print('started', flush=True)\ntime.sleep(1)\nsteps.append(2)"
                group.start_soon(_started, computer, code, started)
                await started.wait()
                taken = await computer.acheckpoint()  # taken once the run has ended
            await _output(computer, "steps.append(3)")
            await computer.arollback(taken)
            assert (await _output(computer, "print(steps)"))[0] == "[1, 2]\n"


async def test_a_rollback_ends_the_run_under_way(tmp_path: Path) -> None:
    with anyio.fail_after(_GUARD):
        async with Computer(cwd=tmp_path) as computer:
            await _output(computer, "import threading\nsteps = [1]")
            taken = await computer.acheckpoint()
            started = anyio.Event()
            ended: list[list[Message]] = []

            async def blocked() -> None:
                code = "steps.append(2)\nprint('started', flush=True)\nthreading.Event().wait()"
                ended.append(await _started(computer, code, started))

            async with anyio.create_task_group() as group:
                group.start_soon(blocked)
                await started.wait()
                await computer.arollback(taken)
            assert (ended[0][-1].extras or {}).get("status") == "restarted"
            assert (await _output(computer, "print(steps)"))[0] == "[1]\n"
