"""What one warm run costs the core: the tasks it starts, the generators it leaves open.

Guards the fixed cost per run: a task group and a background task per run,
checkpoints of primitives with nothing to wait for, and a translated item's
generator left open (each such generator costs a task and a self-pipe wakeup
when the collector finalizes it) once made a warm round trip several times
slower than the interpreter's own.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from .harness import outputs, started

pytestmark = pytest.mark.anyio

RUNS = 20


@contextmanager
def counting(loop: asyncio.AbstractEventLoop) -> Iterator[dict[str, int]]:
    """Counts the tasks ``loop`` creates and the async generators the collector finalizes."""
    counts = {"tasks": 0, "finalized": 0}
    create_task = loop.create_task
    hooks = sys.get_asyncgen_hooks()
    finalize = hooks.finalizer
    assert finalize is not None

    def counted_task(*args: Any, **kwargs: Any) -> Any:
        counts["tasks"] += 1
        return create_task(*args, **kwargs)

    def counted_finalize(agen: Any) -> None:
        counts["finalized"] += 1
        finalize(agen)

    loop.create_task = counted_task  # type: ignore[method-assign]
    sys.set_asyncgen_hooks(hooks.firstiter, counted_finalize)
    try:
        yield counts
    finally:
        sys.set_asyncgen_hooks(*hooks)
        del loop.create_task


async def test_a_warm_run_starts_one_watchdog_and_leaves_nothing_to_the_collector(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        await h.run("print warm", timeout=30)
        with counting(asyncio.get_running_loop()) as counts:
            for n in range(RUNS):
                messages = await h.run(f"print {n}", reply_to=f"c{n}", timeout=30)
                assert outputs(messages) == [f"{n}\n"]
            gc.collect()  # what was left open is finalized now, not after the count
    assert counts["finalized"] == 0, "a run's generators were left for the collector to close"
    # The run's watchdog and nothing else: no task group or helper task per run.
    assert counts["tasks"] == RUNS, counts


async def test_a_caller_that_stops_at_the_final_message_leaves_nothing_to_the_collector(
    tmp_path: Path,
) -> None:
    """Regression: a caller that stops reading at the final message and closes
    the run (as the sandbox's guard does, to look at the limits before it passes
    the final message on) left the run's own message generator open; the
    collector finalized it, a task and a wakeup of the loop every run of ``lmc
    serve``."""
    async with started(tmp_path) as h:
        await h.run("print warm", timeout=30)
        with counting(asyncio.get_running_loop()) as counts:
            for n in range(RUNS):
                stream = h.execute(f"print {n}", reply_to=f"c{n}", timeout=30)
                async for message in stream:
                    if message.is_final:
                        break
                await stream.aclose()
            gc.collect()
    assert counts["finalized"] == 0, "a run's generators were left for the collector to close"
