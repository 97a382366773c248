"""The adaptive pool: starts per core, clients first, shrinking, and its settings."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from lmc_runtime.service.command import configure_parser
from lmc_runtime.service.config import load
from lmc_runtime.service.demand import Demand
from lmc_runtime.service.pool import Pool, host_has_memory
from lmc_runtime.service.session import ServiceSession
from lmc_runtime.service.settings import ServiceSettings

pytestmark = pytest.mark.anyio

#: Bounds a test that hangs.
_HANG = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the service's loop (uvicorn's)


class _Warm:
    """What the pool needs of a session: an id, ``ended``, ``start_error``, ``stop``."""

    def __init__(self, number: int, stopped: Any) -> None:
        self.id = f"s{number}"
        self.ended = anyio.Event()
        self.start_error: BaseException | None = None
        self.stop_reason: str | None = None
        self._stopped = stopped

    def stop(self, reason: str, status: str = "closed") -> None:
        self.stop_reason = reason
        self.ended.set()
        self._stopped()


class _Starts:
    """A start function whose starts finish only when the test lets them."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.made: list[_Warm] = []
        self.release = anyio.Event()
        self.changed = anyio.Event()

    async def __call__(self) -> ServiceSession:
        self.running += 1
        self.most = max(self.most, self.running)
        self._changed()
        await self.release.wait()
        self.running -= 1
        session = _Warm(len(self.made), self._changed)
        self.made.append(session)
        self._changed()
        return cast(ServiceSession, session)

    def _changed(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def until(self, done: Any) -> None:
        with anyio.fail_after(_HANG):
            while not done():
                await self.changed.wait()


def _pool(starts: _Starts, floor: int, ceiling: int, **kwargs: Any) -> Pool:
    demand = Demand(floor, ceiling, parallel=2, cooldown=kwargs.pop("cooldown", 3600.0))
    return Pool(demand, starts, **kwargs)


async def test_the_pool_starts_at_most_one_session_per_core_at_a_time() -> None:
    starts = _Starts()
    pool = _pool(starts, floor=5, ceiling=5)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pool.run)
        await starts.until(lambda: starts.running == 2)
        starts.release.set()
        await starts.until(lambda: pool.ready_count == 5)
        assert starts.most == 2
        pool.drain()
        tg.cancel_scope.cancel()


async def test_the_pool_waits_while_clients_wait_then_refills() -> None:
    starts = _Starts()
    starts.release.set()
    pool = _pool(starts, floor=2, ceiling=2)
    async with anyio.create_task_group() as tg:
        with pool.serving():
            tg.start_soon(pool.run)
            await anyio.wait_all_tasks_blocked()
            assert starts.made == [] and pool.starting == 0
        await starts.until(lambda: pool.ready_count == 2)
        pool.drain()
        tg.cancel_scope.cancel()


async def test_a_burst_grows_the_pool_which_shrinks_after_the_cooldown() -> None:
    starts = _Starts()
    starts.release.set()
    pool = _pool(starts, floor=1, ceiling=4, cooldown=0.5)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pool.run)
        await starts.until(lambda: pool.ready_count == 1)
        for _ in range(4):
            with pool.serving():
                pass
        assert pool.target == 4
        await starts.until(lambda: pool.ready_count == 4)
        # No more creations: after the cool-down, back to the floor.
        await starts.until(lambda: sum(each.ended.is_set() for each in starts.made) == 3)
        assert pool.ready_count == 1 and pool.target == 1
        ended = [each for each in starts.made if each.ended.is_set()]
        assert all("the pool shrank" in str(each.stop_reason) for each in ended)
        pool.drain()
        tg.cancel_scope.cancel()


async def test_past_its_floor_the_pool_grows_only_with_memory_to_spare() -> None:
    starts = _Starts()
    starts.release.set()
    pool = _pool(starts, floor=1, ceiling=4, memory=lambda: False)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pool.run)
        for _ in range(4):
            with pool.serving():
                pass
        await starts.until(lambda: pool.ready_count == 1)
        await anyio.wait_all_tasks_blocked()
        assert pool.ready_count == 1 and pool.target == 4
        pool.drain()
        tg.cancel_scope.cancel()


def test_the_host_memory_check_answers() -> None:
    assert host_has_memory(0)
    assert not host_has_memory(1 << 60)


@pytest.mark.parametrize(
    ("size", "most", "sessions", "ceiling"),
    [(2, 8, 16, 8), (0, 8, 16, 0), (4, 2, 16, 4), (2, 50, 16, 16), (3, 3, 16, 3)],
)
def test_the_pools_ceiling(size: int, most: int, sessions: int, ceiling: int) -> None:
    settings = ServiceSettings(
        data_dir=Path("/tmp/lmc"), token="t", pool_size=size, pool_max=most, max_sessions=sessions
    )
    assert settings.pool_ceiling == ceiling


_DATA = "/tmp/lmc-pool-cfg"


def test_pool_max_and_cooldown_come_from_flags_env_and_file(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="lmc serve")
    configure_parser(parser)
    file = tmp_path / "serve.toml"
    file.write_text("pool_cooldown = 30\n")
    # The data directory is only named (never made): short, as unix sockets need.
    argv = ["--data-dir", _DATA, "--config", str(file), "--pool-max", "12"]
    settings = load(parser.parse_args(argv), {"LMC_TOKEN": "t0ken-value-0123456789"}).settings
    assert (settings.pool_max, settings.pool_cooldown) == (12, 30.0)
    env = {"LMC_TOKEN": "t0ken-value-0123456789", "LMC_SERVE_POOL_MAX": "5"}
    settings = load(parser.parse_args(["--data-dir", _DATA]), env).settings
    assert (settings.pool_max, settings.pool_cooldown) == (5, 300.0)
