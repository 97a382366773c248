"""A kernel that floods IOPub after its run ended never stalls the event loop that
serves the other sessions, nor fills the host's memory with what it sends."""

from __future__ import annotations

import anyio
import pytest

from lmc_runtime import Computer

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

#: A thread that displays 1 MB of HTML as fast as it can for 20 s, after its run.
FLOOD = """\
import threading, time
from IPython.display import HTML, display
page = HTML("d" * 1_000_000)
def flood():
    end = time.monotonic() + 20
    while time.monotonic() < end:
        display(page)
threading.Thread(target=flood, daemon=True).start()
print("flooding")
"""
#: Far above a run's time when the loop is free (milliseconds); far below the flood's.
BOUND = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_late_displays_never_stall_the_other_sessions() -> None:
    """Regression: each late 1 MB display was parsed in full on the event loop, by a
    reader that never let other tasks run while messages kept coming: another
    session's ``print`` took 21 s, and the server's memory grew by 1 GB in 6 s."""
    async with Computer() as computer:
        started = [m async for m in computer.arun("python", FLOOD)]
        assert started[-1].status == "ok", started
        for language, code in (("shell", "echo other"), ("python", "print('other')")):
            with anyio.fail_after(BOUND):  # only a stalled loop trips it
                after = [m async for m in computer.arun(language, code)]
            # ipykernel files a thread's displays under the cell running now, and a
            # display flushes the stream first: ``print`` may come as "other" and "\n"
            # with displays between them.
            outputs = [m.content.rstrip("\n") for m in after if m.format == "output"]
            assert "other" in outputs, after
            assert after[-1].status in ("ok", "truncated"), after[-1]
