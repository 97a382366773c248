"""The session's disk, unmounted (measured): the whole disk folder is counted,
the walk is bounded and runs off the event loop, and the room left caps spills."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from lmc_runtime.budget.output import OutputBudget
from lmc_runtime.sandbox import disk as disk_module
from lmc_runtime.sandbox.disk import WorkDisk, tree_bytes

MIB = 1 << 20


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def _unmounted(tmp_path: Path, limit: int | None) -> WorkDisk:
    """A disk that is never mounted (as for an unprivileged server)."""
    return WorkDisk(tmp_path / "disk", tmp_path / "disk.img", limit)


@pytest.mark.anyio
async def test_every_folder_of_the_disk_counts(tmp_path: Path) -> None:
    """Guards the disk limit against writes outside the working directory: the
    shared folder and the spill files count as much as the working one."""
    disk = _unmounted(tmp_path, 4 * MIB)
    disk.path.mkdir()
    for folder in ("work", "shared", "output"):
        _write(disk.path / folder / "a.bin", MIB)
    used = await disk.measure()
    assert 3 * MIB <= used < 3 * MIB + 64 * 1024
    assert not disk.full() and disk.room() == 4 * MIB - used
    _write(disk.path / "shared" / "b.bin", 2 * MIB)
    await disk.measure()
    assert disk.full() and disk.room() == 0
    assert disk.mechanism.startswith("measured")


@pytest.mark.anyio
async def test_used_is_the_last_measurement_and_never_walks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``used()`` is called on the event loop (a session's status): it must not walk."""
    disk = _unmounted(tmp_path, 4 * MIB)
    disk.path.mkdir()
    _write(disk.path / "work" / "a.bin", MIB)
    await disk.measure()
    monkeypatch.setattr(disk_module, "tree_bytes", None)  # any walk now fails
    assert disk.used() >= MIB and disk.room() is not None and not disk.full()


def test_the_walk_is_bounded(tmp_path: Path) -> None:
    """Guards the host against a tree of 120k files: the walk stops at its bound."""
    folder = tmp_path / "many"
    folder.mkdir()
    for number in range(60):
        (folder / str(number)).touch()
    scan = tree_bytes(tmp_path, max_entries=50)
    assert scan.truncated and scan.entries == 50
    whole = tree_bytes(tmp_path, max_entries=1000)
    assert not whole.truncated and whole.entries == 61


@pytest.mark.anyio
async def test_a_tree_past_the_bound_counts_as_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disk_module, "SCAN_ENTRIES", 20)
    monkeypatch.setattr(disk_module, "tree_bytes", lambda root: tree_bytes(root, max_entries=20))
    disk = _unmounted(tmp_path, 512 * MIB)
    (disk.path / "work").mkdir(parents=True)
    for number in range(30):
        (disk.path / "work" / str(number)).touch()
    await disk.measure()
    assert disk.over_scan_bound and disk.full() and disk.room() == 0


@pytest.mark.anyio
async def test_the_walk_runs_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards the event loop: a scan of a directory the sandbox fills once
    blocked it for seconds."""
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def walk(root: Path) -> disk_module.Scan:
        seen.append(threading.get_ident())
        return disk_module.Scan(0, 0)

    monkeypatch.setattr(disk_module, "tree_bytes", walk)
    disk = _unmounted(tmp_path, MIB)
    disk.path.mkdir()
    await disk.measure()
    assert seen and seen[0] != loop_thread


@pytest.mark.anyio
async def test_no_limit_is_never_full(tmp_path: Path) -> None:
    disk = _unmounted(tmp_path, None)
    disk.path.mkdir()
    _write(disk.path / "work" / "a.bin", MIB)
    await disk.measure()
    assert not disk.full() and disk.room() is None and disk.mechanism == "none"


def test_a_spill_with_no_room_saves_nothing_and_says_so(tmp_path: Path) -> None:
    """Guards the disk limit against spill files: with no room left, nothing is
    written, and the output still comes with a note."""
    budget = OutputBudget(100, tmp_path / "output", "run", spill_limit=0)
    for _ in range(50):
        budget.feed("y" * 99 + "\n")
    cut = budget.finish()
    assert cut is not None and cut.cut and cut.path is None
    assert "could not be saved" in cut.text
    assert not (tmp_path / "output").exists() or not any((tmp_path / "output").iterdir())


def test_a_spill_is_capped_in_bytes(tmp_path: Path) -> None:
    """Non-ASCII output: the cap counts UTF-8 bytes, not characters."""
    budget = OutputBudget(100, tmp_path, "run", spill_limit=1000)
    for _ in range(100):
        budget.feed("é" * 50 + "\n")
    cut = budget.finish()
    assert cut is not None and cut.path is not None
    assert cut.path.stat().st_size <= 1000


class _FullDisk:
    """A spill file on a disk that just filled up."""

    def __init__(self, fail_write: bool) -> None:
        self.fail_write = fail_write

    def write(self, text: str) -> int:
        if self.fail_write:
            raise OSError(28, "No space left on device")
        return len(text)

    def close(self) -> None:
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize("fail_write", [True, False], ids=["on write", "on close"])
def test_a_spill_that_hits_enospc_is_not_an_error(tmp_path: Path, fail_write: bool) -> None:
    """A full disk while saving (a write, or the flush at close): the output
    comes with a note, nothing raises."""
    budget = OutputBudget(100, tmp_path, "run")
    budget.feed("a" * 200)
    assert budget.exceeded and budget._file is not None
    budget._file.close()
    budget._file = _FullDisk(fail_write)  # type: ignore[assignment]
    budget.feed("b" * 10_000)
    budget.feed("c" * 10_000)
    cut = budget.finish()
    assert cut is not None and cut.cut and cut.path is not None
    assert "saving the rest failed (No space left on device)" in cut.text
    assert cut.text.endswith("c" * 50)


def test_a_disk_not_measured_yet_has_all_its_room(tmp_path: Path) -> None:
    disk = _unmounted(tmp_path, MIB)
    assert disk.room() == MIB
    anyio.run(disk.measure)
    assert disk.room() == MIB and disk.used() == 0


def test_a_folder_swapped_for_a_link_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the walk pushed a folder's path and listed it by name later, so
    code that swapped the folder for a link in between had a host folder it
    cannot see counted (a 40 MiB host folder showed in the session's use)."""
    root, outside = tmp_path / "disk", tmp_path / "host"
    _write(root / "x" / "small.bin", 4096)
    _write(outside / "big.bin", 4 * MIB)
    real = disk_module.os.scandir
    calls = []

    def swapping(target):  # type: ignore[no-untyped-def]
        calls.append(target)
        if len(calls) == 2:  # after the top's listing, before x's: swap x for a link
            (root / "x").rename(tmp_path / "moved")
            (root / "x").symlink_to(outside)
        return real(target)

    monkeypatch.setattr(disk_module.os, "scandir", swapping)
    scan = tree_bytes(root)
    assert len(calls) == 2
    assert scan.bytes < MIB, scan


def test_the_inode_reserve_is_made_once_not_after_every_run(tmp_path: Path) -> None:
    """Regression: every run's end touched the reserve's 64 files in a worker thread
    (about 1 ms a run over HTTP); it is made again only once released."""
    disk = WorkDisk(tmp_path, tmp_path / "image", 1 << 30)
    disk.mounted = True  # as if its image were mounted at tmp_path
    assert disk.reserve_missing
    disk.keep_reserve()
    assert not disk.reserve_missing and len(list((tmp_path / "reserve").iterdir())) == 64
    (tmp_path / "reserve" / "0").unlink()
    disk.keep_reserve()  # nothing to do: no file is made again
    assert not (tmp_path / "reserve" / "0").exists()
