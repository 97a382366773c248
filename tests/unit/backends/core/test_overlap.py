"""A restart with ``overlap`` (a rollback's): the old interpreter is killed while
the new one launches, and that kill ends whatever happens to the restart."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from lmc_runtime.backends.core import Supervisor
from lmc_runtime.errors import KernelStartError

from .harness import outputs, started

pytestmark = pytest.mark.anyio


def _ready(old: object) -> None:
    """What a rollback does to the old interpreter first (nothing, for a fake)."""


def _supervisor(session: object) -> Supervisor:
    supervisor = getattr(session, "supervisor", None)
    assert isinstance(supervisor, Supervisor)
    return supervisor


async def test_an_overlapping_restart_cancelled_during_the_launch_still_ends_the_old_one(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        old = h.fake
        h.backend.launch_gate = anyio.Event()
        h.backend.kill_gate = anyio.Event()
        scope = anyio.CancelScope()

        async def restart() -> None:
            with scope:
                await _supervisor(h.session).restart(overlap=_ready)

        async with anyio.create_task_group() as tg:
            tg.start_soon(restart)
            await anyio.wait_all_tasks_blocked()  # the new one launching, the old one ending
            assert old.kills == 1
            scope.cancel()
            await anyio.wait_all_tasks_blocked()
            h.backend.kill_gate.set()
        assert scope.cancelled_caught
        assert old.ended.is_set(), "the cancelled restart cut the old interpreter's kill short"
        h.backend.launch_gate.set()
        assert outputs(await h.run("print a")) == ["a\n"]


async def test_an_overlapping_restart_whose_old_kill_fails_raises_no_group(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        old = h.fake

        async def failing_kill() -> None:
            raise OSError("the kill failed")

        old.kill = failing_kill  # type: ignore[method-assign]
        await _supervisor(h.session).restart(overlap=_ready)
        assert h.fake is not old
        assert outputs(await h.run("print a")) == ["a\n"]


async def test_an_overlapping_restart_whose_launch_fails_raises_its_error(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        h.backend.start_failures = ["no more fakes"]
        with pytest.raises(KernelStartError, match="no more fakes"):
            await _supervisor(h.session).restart(overlap=_ready)
        assert outputs(await h.run("print a")) == ["a\n"], "the next run starts one"


async def test_each_overlapping_restart_readies_the_interpreter_it_replaces(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        readied: list[object] = []
        async with anyio.create_task_group() as tg:
            for _ in range(2):
                tg.start_soon(lambda: _supervisor(h.session).restart(overlap=readied.append))
        assert readied == h.backend.interpreters[:2], "the second readies the first's new one"
        assert outputs(await h.run("print a")) == ["a\n"]
