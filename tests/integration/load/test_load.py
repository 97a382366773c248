"""One minute of load on a real ``lmc serve``: 12 sessions, each running Python,
shell and JavaScript in turn, against a pool of 4.

What it guards: no execution fails or answers an unexpected status under load;
the server tree's resident memory stays flat once every interpreter has
started (a per-execution leak in the server or an interpreter would climb);
once the sessions are deleted, no process, descriptor, mount, cgroup or
temporary file of theirs is left. The 10-minute, 50-session version is
``python -m benchmarks.load.loadtest -n 50 --duration 600`` (docs/reliability.md).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import partial

import anyio
import pytest

from benchmarks.load.loadmix import run_mixed

from ..service.server import TOKEN, wait_for_pool
from .census import Served, settled

#: A minute of 12 busy sessions takes every core: it runs alone, after the rest
#: (tests beside it would crawl, and slow its sessions' warm-up in turn).
pytestmark = pytest.mark.serial

SESSIONS = 12
POOL = 4
DURATION = 60.0
#: How far RSS may rise from warm-up to the end (measured: under 1 %).
FLAT_PERCENT = 20.0


@pytest.mark.timeout(240)
def test_a_minute_of_mixed_load_holds_with_flat_memory_and_leaves_nothing(
    serve: Callable[..., AbstractContextManager[Served]],
) -> None:
    pool = ("--pool-size", str(POOL), "--pool-max", str(POOL))
    with serve(*pool, "--max-sessions", str(SESSIONS + POOL + 2)) as served:
        wait_for_pool(served.server, POOL)
        run = partial(run_mixed, target=served.target, flat_percent=FLAT_PERCENT)
        languages = ["python", "shell", "javascript"]
        report = anyio.run(run, served.server.url, TOKEN, SESSIONS, DURATION, languages)
        figures = report.to_dict()

        assert report.errors == [], figures
        assert report.executions >= SESSIONS * len(languages), figures
        assert report.warm is not None, f"the sessions never all warmed up: {figures}"
        assert report.flat, f"RSS rose more than {FLAT_PERCENT} % after warm-up: {figures}"
        assert report.start is not None and report.after is not None
        assert report.leaked() == {}, figures
        # Every other count is back too (waiting, bounded, for what is still closing);
        # but threads: idle worker threads retire only once the server has work
        # again (the leak test counts them).
        settled(served, report.start, bound=30, ignored=("server_threads",))
