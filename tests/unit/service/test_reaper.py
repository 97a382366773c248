"""The reaper of a server's sessions (``lmc_runtime/service/reaper.py``): it
touches a data directory's session folders only when no server holds it, and a
start that meets it looking waits for it instead of giving up."""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime.service import reaper
from lmc_runtime.service.datadir import DataDirInUse, DataDirLock, reaping

LEFT = "0123456789abcdef"
#: Bounds each wait here.
_GUARD = 30.0


@pytest.fixture
def data_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        (Path(tmp) / "sessions" / LEFT).mkdir(parents=True)
        (Path(tmp) / "sessions" / LEFT / "kept.txt").write_text("for the next start")
        yield Path(tmp)


@pytest.fixture
def released(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The sessions folders :func:`reaper.reap` released (nothing is, for real)."""
    calls: list[Path] = []

    async def release(sessions: Path) -> list[str]:
        calls.append(sessions)
        return sorted(os.listdir(sessions))

    monkeypatch.setattr(reaper, "release_stale_sessions", release)
    return calls


def test_the_reaper_leaves_alone_the_sessions_of_a_data_dir_a_server_holds(
    data_dir: Path, released: list[Path]
) -> None:
    lock = DataDirLock(data_dir)
    lock.acquire()
    try:
        assert reaper.reap(data_dir) == []
        assert released == []
    finally:
        lock.release()
    assert reaper.reap(data_dir) == [LEFT]
    assert released == [data_dir / "sessions"]
    # The next start's to clean: its runs are closed (server_lost) as it does.
    assert (data_dir / "sessions" / LEFT / "kept.txt").is_file()


def _blocked_on(path: Path) -> bool:
    """Whether a flock on ``path`` is waited for (``/proc/locks``: ``->``)."""
    inode = f":{os.stat(path).st_ino} "
    with open("/proc/locks", encoding="ascii") as locks:
        return any("->" in line and inode in line for line in locks)


def test_a_start_that_meets_the_reaper_looking_waits_for_it_then_starts(
    data_dir: Path,
) -> None:
    """Regression guard for the reaper's look at the data directory's lock
    (taken and dropped while it holds the reaping lock): a start that tried the
    lock then was refused (another lmc serve is using the data directory)."""
    looking, done = threading.Event(), threading.Event()

    def reaper_look() -> None:
        with reaping(data_dir):
            fd = os.open(data_dir / "lmc-serve.lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            looking.set()
            done.wait(_GUARD)
            os.close(fd)

    outcome: list[object] = []

    def start() -> None:
        lock = DataDirLock(data_dir)
        try:
            lock.acquire()
        except DataDirInUse as exc:
            outcome.append(exc)
        else:
            outcome.append(lock)

    looker = threading.Thread(target=reaper_look)
    looker.start()
    starter = threading.Thread(target=start)
    try:
        assert looking.wait(_GUARD)
        starter.start()
        # Until the start waits for the reaping lock, or has ended (refused at once).
        deadline = time.monotonic() + _GUARD
        while starter.is_alive() and not _blocked_on(data_dir / "lmc-reap.lock"):
            assert time.monotonic() < deadline, "the start neither waited nor ended"
            starter.join(0.01)
    finally:
        done.set()
        looker.join(_GUARD)
        if starter.ident is not None:
            starter.join(_GUARD)
    assert len(outcome) == 1 and isinstance(outcome[0], DataDirLock), outcome
    outcome[0].release()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_reaper_whose_server_ended_says_which_sessions_it_released(
    data_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The real reaper process: it imports the server's package once it has
    work, and exits at once when the server left no session."""
    ended = reaper.SessionReaper(data_dir)
    ended.start()
    assert await ended.aclose() == 0
    assert f"released the mounts and cgroups of its 1 sessions ({LEFT})" in capfd.readouterr().err
    assert (data_dir / "sessions" / LEFT / "kept.txt").is_file()

    (data_dir / "sessions" / LEFT / "kept.txt").unlink()
    (data_dir / "sessions" / LEFT).rmdir()
    clean = reaper.SessionReaper(data_dir)
    clean.start()
    assert await clean.aclose() == 0
    assert capfd.readouterr().err == ""
