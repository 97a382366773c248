"""Closing a Computer ends a run in flight as ``closed`` and leaves no kernel process behind."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from lmc_runtime import Computer, Message

from ..conftest import run

#: Bounds every wait below; only a hang comes near it.
_GUARD = 60.0


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(proc.name))
    return found


async def _ended(pid: int) -> None:
    """Return once process ``pid`` has ended (a pidfd becomes readable)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with anyio.fail_after(_GUARD):
            await anyio.wait_readable(fd)
    finally:
        os.close(fd)


def test_close_ends_the_kernel_process() -> None:
    computer = Computer()
    with computer:
        run(computer, "print(1)")
        work_dir = str(computer._work_dir)
        assert _processes_mentioning(work_dir)
    assert _processes_mentioning(work_dir) == []


def test_close_during_an_automatic_restart_leaves_no_kernel_behind() -> None:
    """Guards the shutdown/restart ordering: shutdown waits for a restart in flight,
    so the restart cannot launch a kernel after the old group was killed."""
    computer = Computer()
    with computer:
        pid = int(run(computer, "import os\nprint(os.getpid())").output)
        work_dir = str(computer._work_dir)
        run(computer, "import os, threading\nthreading.Timer(0.05, os._exit, (1,)).start()")
        # The kernel is dead: the watcher has seen it and is starting a new one now.
        anyio.run(_ended, pid)
    assert _processes_mentioning(work_dir) == []


def test_a_run_in_flight_when_the_session_closes_ends_closed() -> None:
    """Regression: a Python run cut by the close ended ``restarted``, not ``closed``."""

    async def main() -> list[Message]:
        messages: list[Message] = []
        started = anyio.Event()
        code = "import time\nprint('going', flush=True)\ntime.sleep(60)\nprint('never')"
        async with anyio.create_task_group() as tg:
            # Entered last, so this task may close it while the run streams.
            computer = await Computer().__aenter__()

            async def consume() -> None:
                async for message in computer.arun("python", code):
                    messages.append(message)
                    if message.format == "output":
                        started.set()

            tg.start_soon(consume)
            with anyio.fail_after(_GUARD):
                await started.wait()
            await computer.aclose()
        return messages

    messages = anyio.run(main)
    final = messages[-1]
    assert final.format == "active_line" and final.content is None
    assert final.status == "closed", messages
    assert [m for m in messages if m.is_final] == [final]
    notices = [m for m in messages if str(m.content).startswith("[lmc]")]
    assert notices and notices[-1].status == "closed", messages
    assert "never" not in "".join(str(m.content) for m in messages)
