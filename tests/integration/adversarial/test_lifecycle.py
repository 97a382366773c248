"""restart() and close() while code runs, two Computers at once, async callers that leave."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from lmc_runtime import Computer, Message, Timeouts, UsageError

from ..conftest import Result, run
from .conftest import GUARD, Background, assert_well_formed


def test_restart_while_code_runs_in_another_thread(c: Computer) -> None:
    running = Background(c, "import time\nprint('start', flush=True)\ntime.sleep(10)")
    running.wait_printed()
    c.restart("python")
    result = running.result()
    assert_well_formed(result)
    assert result.status == "restarted" and result.final.extras["state_lost"] is True  # type: ignore[index]
    assert result.output.startswith("start\n")
    assert run(c, "print('after restart')").output == "after restart\n"


def test_close_while_a_blocked_run_is_in_progress_in_another_thread() -> None:
    comp = Computer(timeouts=Timeouts(execution=10))
    run(comp, "1")
    running = Background(comp, "import time\nprint('start', flush=True)\ntime.sleep(10)")
    running.wait_printed()
    comp.close()
    assert_well_formed(running.result())
    with pytest.raises(UsageError):
        run(comp, "print(1)")


def test_close_between_messages_does_not_raise_into_the_callers_loop() -> None:
    """close() from another thread while the caller is between two messages of
    run() ends the run with its final message; nothing raises into the caller's loop."""
    comp = Computer(timeouts=Timeouts(execution=10))
    run(comp, "1")
    messages: list[Message] = []
    try:
        for m in comp.run(
            "python", "import time\nprint('x', flush=True)\ntime.sleep(2)\nprint('y')"
        ):
            messages.append(m)
            if m.content == "x\n":
                closer = threading.Thread(target=comp.close)
                closer.start()
                closer.join(GUARD)
        assert_well_formed(Result(messages))
    finally:
        comp.close()


def test_two_computers_at_once_are_independent() -> None:
    box: dict[int, list[Any]] = {}
    errors: list[BaseException] = []

    def go(k: int) -> None:
        try:
            with Computer(timeouts=Timeouts(execution=60)) as comp:
                first = run(
                    comp, f"import os, time\nv = {k}\ntime.sleep(0.3)\nprint(v, os.getpid())"
                )
                second = run(comp, "print(v)")
                box[k] = [first.output.split()[1:2], second.output, first.status]
        except BaseException as exc:  # reported below, not lost with the thread
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(box) == [0, 1], box
    assert box[0][1] == "0\n" and box[1][1] == "1\n", box
    assert box[0][0] != box[1][0], "two Computers shared one kernel"


def test_async_break_and_cancel_free_the_session() -> None:
    async def main() -> list[Any]:
        async with Computer(timeouts=Timeouts(execution=10, interrupt_grace=1.0)) as comp:
            async for _ in comp.arun("python", "kept = 3"):
                pass
            async for _m in comp.arun("python", "print('loop', flush=True)\nwhile True: pass"):
                break

            async def forever() -> None:
                async for _m in comp.arun("python", "import time\nwhile True: time.sleep(0.01)"):
                    pass

            with anyio.move_on_after(0.5):
                await forever()
            return [m.content async for m in comp.arun("python", "print(kept * 2)")]

    assert anyio.run(main) == ["6\n", None]
