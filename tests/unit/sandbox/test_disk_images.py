"""The folder of disk images a server keeps (``DiskImages``), with the format faked:
what it holds after a cancelled format, two sizes made at once, and many sizes."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import anyio
import pytest

from lmc_runtime.sandbox import disk_images
from lmc_runtime.sandbox.disk_images import SIZES_KEPT, DiskImages

_MIB = 1 << 20


def _contents(folder: Path) -> None:
    (folder / "reserve").mkdir()


async def _fake_format(image: Path, size: int, contents: Path | None = None) -> None:
    with open(image, "xb") as file:
        file.truncate(size)


def test_a_cancelled_format_does_not_fail_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the staged contents of a format cancelled (a session's start
    ended) stayed, and every later format of that size failed on them: the
    sessions' disks of that size were no longer limited."""
    images = DiskImages(tmp_path / "images", _contents)
    started = anyio.Event()

    async def stuck(image: Path, size: int, contents: Path | None = None) -> None:
        started.set()
        await anyio.sleep_forever()

    async def main() -> None:
        monkeypatch.setattr(disk_images, "format_image", stuck)
        async with anyio.create_task_group() as tg:
            tg.start_soon(images.copy, _MIB, tmp_path / "first.img")
            with anyio.fail_after(10):
                await started.wait()
            tg.cancel_scope.cancel()
        assert not (tmp_path / "images" / f"ext4-{_MIB}.contents").exists()
        monkeypatch.setattr(disk_images, "format_image", _fake_format)
        with anyio.fail_after(10):
            await images.copy(_MIB, tmp_path / "second.img")

    anyio.run(main)
    assert (tmp_path / "second.img").stat().st_size == _MIB


def test_two_sizes_made_at_once_empty_the_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: each size emptied the folder on its first use, one while
    another's format was under way in it (its image then failed, or was removed
    after it was made)."""
    monkeypatch.setattr(disk_images, "format_image", _fake_format)
    images = DiskImages(tmp_path / "images")
    prepare, calls, release = images._prepare, [], threading.Event()

    def held_prepare() -> None:
        calls.append(1)
        if len(calls) == 1:
            release.wait(10)
        prepare()

    monkeypatch.setattr(images, "_prepare", held_prepare)

    async def main() -> None:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(images.copy, _MIB, tmp_path / "a.img")
                tg.start_soon(images.copy, 2 * _MIB, tmp_path / "b.img")
                await anyio.wait_all_tasks_blocked()
                release.set()

    anyio.run(main)
    assert len(calls) == 1
    made = sorted(p.name for p in (tmp_path / "images").iterdir())
    assert made == [f"ext4-{_MIB}.img", f"ext4-{2 * _MIB}.img"]


def test_only_a_few_sizes_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: an image was kept for every size a session asked for, until the
    server ended: sessions of sizes each their own grew the data directory
    without bound. Past the sizes kept, a disk is formatted for itself."""
    formatted: list[Path] = []

    async def counted(image: Path, size: int, contents: Path | None = None) -> None:
        formatted.append(image)
        await _fake_format(image, size, contents)

    monkeypatch.setattr(disk_images, "format_image", counted)
    images = DiskImages(tmp_path / "images")
    sizes = [(n + 1) * _MIB for n in range(SIZES_KEPT + 3)]

    async def main() -> None:
        for size in sizes:
            await images.copy(size, tmp_path / f"disk-{size}.img")
        await images.copy(sizes[0], tmp_path / "again.img")  # a kept size: copied

    anyio.run(main)
    kept = sorted((tmp_path / "images").iterdir())
    assert len(kept) == SIZES_KEPT
    for size in sizes[SIZES_KEPT:]:
        assert tmp_path / f"disk-{size}.img" in formatted  # formatted for itself
        assert (tmp_path / f"disk-{size}.img").stat().st_size == size
    assert tmp_path / "again.img" not in formatted
    assert (tmp_path / "again.img").stat().st_size == sizes[0]


def test_an_image_is_made_where_mkfs_cannot_copy_a_folder_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: where ``mkfs.ext4`` has no ``-d`` (e2fsprogs before 1.43), no
    image could be made, and every session's disk was left without a limit; the
    image is then formatted empty (each disk makes its own reserve, as before)."""
    formatted: list[Path | None] = []

    async def no_d(image: Path, size: int, contents: Path | None = None) -> None:
        formatted.append(contents)
        if contents is not None:
            with open(image, "xb"):
                pass
            raise subprocess.CalledProcessError(1, ["mkfs.ext4", "-d"])
        await _fake_format(image, size)

    monkeypatch.setattr(disk_images, "format_image", no_d)
    images = DiskImages(tmp_path / "images", _contents)
    anyio.run(images.copy, _MIB, tmp_path / "disk.img")
    assert (tmp_path / "disk.img").stat().st_size == _MIB
    assert formatted[-1] is None
    assert [p.name for p in (tmp_path / "images").iterdir()] == [f"ext4-{_MIB}.img"]
