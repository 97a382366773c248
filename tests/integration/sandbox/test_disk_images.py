"""Sessions' disks copied from one formatted image per size (``DiskImages``).

Regression: every session's start ran ``mkfs.ext4`` (4 to 9 ms and a process
of its own, before its sandbox could start) and made the host's reserve of 64
inodes (1.7 ms, on the event loop); a server now formats one image per size,
the reserve in it, and copies it, sparsely."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import anyio
import pytest

from lmc_runtime.sandbox import disk_images
from lmc_runtime.sandbox.disk import WorkDisk
from lmc_runtime.sandbox.disk_images import DiskImages, sparse_copy

_MIB = 1 << 20
needs_mount = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mkfs.ext4") is None,
    reason="mounting a disk needs root and mkfs.ext4",
)


def test_a_sparse_copy_has_the_same_bytes_and_keeps_its_holes(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    with open(source, "wb") as file:
        file.truncate(64 * _MIB)
        for offset in (0, 5 * _MIB + 17, 64 * _MIB - 3):
            file.seek(offset)
            file.write(b"abc")
    sparse_copy(source, target)
    assert target.read_bytes() == source.read_bytes()
    assert os.stat(target).st_blocks * 512 < 2 * _MIB  # the holes stayed holes
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    with pytest.raises(FileExistsError):
        sparse_copy(source, target)  # never over an existing file


def test_a_link_is_never_copied_from(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"secret")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OSError):
        sparse_copy(tmp_path / "link", tmp_path / "target")


@needs_mount
def test_one_format_per_size_and_each_session_mounts_its_own_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    formatted: list[str] = []
    original = disk_images.format_image

    async def counted(image: Path, size: int, contents: Path | None = None) -> None:
        formatted.append(image.name)
        await original(image, size, contents)

    monkeypatch.setattr(disk_images, "format_image", counted)

    def no_reserve_made(self: WorkDisk) -> None:
        raise AssertionError("the reserve was made for a disk copied with it")

    monkeypatch.setattr(WorkDisk, "keep_reserve", no_reserve_made)
    images = DiskImages(tmp_path / "images", WorkDisk.contents)
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / f"ext4-{64 * _MIB}.img").write_bytes(b"left by an earlier run")

    async def main() -> None:
        disks = [
            WorkDisk(tmp_path / f"d{n}", tmp_path / f"d{n}.img", 64 * _MIB, images)
            for n in range(3)
        ]
        try:
            for disk in disks:
                await disk.setup()
            assert all(disk.mounted for disk in disks)
            (disks[0].path / "only-here").write_text("one")
            assert not (disks[1].path / "only-here").exists()  # copies, not one disk
            assert disks[1].room() is not None and disks[1].used() == 0
            for disk in disks:  # the reserve came with the image, the host's alone
                reserve = disk.path / "reserve"
                assert len(os.listdir(reserve)) == 64 and not disk.reserve_missing
                assert stat.S_IMODE(os.stat(reserve).st_mode) == 0o700
                assert os.stat(reserve / "0").st_uid == 0
                assert not (disk.path / "lost+found").exists()
        finally:
            for disk in disks:
                await disk.teardown()

    try:
        anyio.run(main)
    finally:
        images.close()
    assert formatted == [f"ext4-{64 * _MIB}.partial"]  # the earlier file was not trusted
    assert not (tmp_path / "images").exists()  # closed: the images go


@needs_mount
def test_the_images_folder_is_the_hosts_alone(tmp_path: Path) -> None:
    images = DiskImages(tmp_path / "images")
    try:
        anyio.run(images.prepare, 32 * _MIB)
        folder = os.stat(tmp_path / "images")
        assert stat.S_IMODE(folder.st_mode) == 0o700 and folder.st_uid == 0
        with open(tmp_path / "images" / f"ext4-{32 * _MIB}.img", "rb") as image:
            image.seek(1080)
            assert image.read(2) == b"\x53\xef"  # an ext4 superblock's magic
    finally:
        images.close()


def test_prepare_without_a_size_or_root_does_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    images = DiskImages(tmp_path / "images")
    anyio.run(images.prepare, None)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    anyio.run(images.prepare, 32 * _MIB)
    assert not (tmp_path / "images").exists()


@needs_mount
def test_a_start_cancelled_while_mkfs_runs_leaves_the_next_one_its_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's start cancelled while the image of its size is being formatted
    (its client went away) leaves no partial image, staged contents or ``mkfs``
    behind, and the next start of that size formats it and mounts its copy."""
    original = disk_images.format_image
    started = anyio.Event()

    async def watched(image: Path, size: int, contents: Path | None = None) -> None:
        started.set()
        await original(image, size, contents)

    monkeypatch.setattr(disk_images, "format_image", watched)
    images = DiskImages(tmp_path / "images", WorkDisk.contents)
    size = 64 * _MIB

    async def main() -> None:
        first = WorkDisk(tmp_path / "d0", tmp_path / "d0.img", size, images)
        async with anyio.create_task_group() as tg:
            tg.start_soon(first.setup)
            with anyio.fail_after(30):
                await started.wait()
            tg.cancel_scope.cancel()
        await first.teardown()
        left = sorted(p.name for p in (tmp_path / "images").iterdir())
        assert left == []  # no .partial, no .contents
        second = WorkDisk(tmp_path / "d1", tmp_path / "d1.img", size, images)
        try:
            with anyio.fail_after(60):
                await second.setup()
            assert second.mounted and len(os.listdir(second.path / "reserve")) == 64
        finally:
            await second.teardown()

    try:
        anyio.run(main)
    finally:
        images.close()
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _is_mkfs_of(p, tmp_path)]


def _is_mkfs_of(pid: str, folder: Path) -> bool:
    """Whether process ``pid`` is an ``mkfs`` working in ``folder``."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            argv = file.read().split(b"\0")
    except OSError:
        return False
    return bool(argv) and b"mkfs" in argv[0] and any(str(folder).encode() in a for a in argv)
