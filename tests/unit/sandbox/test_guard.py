"""The guard's process limit without a pids cgroup (the signs of RLIMIT_NPROC in
the output), its pluggable reaper, and the disk limit of a measured disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime import replies
from lmc_runtime.sandbox.disk import WorkDisk
from lmc_runtime.sandbox.guard import Guard
from lmc_runtime.sandbox.policy import SessionLimits

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _guard(tmp_path: Path, **kwargs: object) -> Guard:
    disk = WorkDisk(tmp_path / "disk", tmp_path / "disk.img", 1 << 20)
    disk.path.mkdir()
    return Guard(SessionLimits(processes=64), None, disk, **kwargs)  # type: ignore[arg-type]


PYTHON_FORK = (
    "Traceback (most recent call last):\n  Cell In[1], line 3\n    os.fork()\n"
    "BlockingIOError: [Errno 11] Resource temporarily unavailable\n"
)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (PYTHON_FORK, "BlockingIOError"),
        ("bash: fork: retry: Resource temporarily unavailable\n", None),
        ("RuntimeError: can't start new thread\n", "RuntimeError"),
    ],
    ids=["python fork", "bash fork", "thread"],
)
async def test_the_signs_of_the_rlimit_are_a_process_limit(
    tmp_path: Path, text: str, error: str | None
) -> None:
    """Guards the process limit without a cgroup: a fork bomb under an
    unprivileged server once ended ``ok`` and left 500 tasks running."""
    guard = _guard(tmp_path)
    probe = await guard.begin()
    extras = {"stream": "stderr", **({"error": error} if error else {})}
    probe.observe(replies.output(text, "r1", **extras))
    found = await guard.finish(probe)
    assert [v.status for v in found] == ["process_limit"]
    assert found[0].restart


async def test_a_nonblocking_socket_is_not_a_fork_bomb(tmp_path: Path) -> None:
    guard = _guard(tmp_path)
    probe = await guard.begin()
    text = "    sock.recv(10)\nBlockingIOError: [Errno 11] Resource temporarily unavailable\n"
    probe.observe(replies.output(text, "r1", stream="stderr", error="BlockingIOError"))
    assert await guard.finish(probe) == []


async def test_the_reaper_is_pluggable(tmp_path: Path) -> None:
    """A session with a host user of its own plugs in a reaper that kills that
    user's processes; the guard calls it."""
    calls: list[str] = []

    class Reaper:
        async def kill_leftovers(self) -> None:
            calls.append("killed")

    guard = _guard(tmp_path, reaper=Reaper())
    await guard.kill_leftovers()
    assert calls == ["killed"]


async def test_a_measured_disk_past_its_limit_is_a_disk_limit_once(tmp_path: Path) -> None:
    guard = _guard(tmp_path)
    probe = await guard.begin()
    (guard.disk.path / "shared").mkdir()
    (guard.disk.path / "shared" / "fill.bin").write_bytes(b"x" * (2 << 20))
    found = await guard.finish(probe)
    assert [v.status for v in found] == ["disk_limit"] and "2 MiB" in found[0].text
    again = await guard.begin()
    assert await guard.finish(again) == []  # still full: not news
    assert guard.spill_room() == 0
