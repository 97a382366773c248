"""A session's disk mounted in this process (``loopmount``), with mount(8) left
as the fallback, and a start cancelled once the image is mounted leaving
nothing mounted after teardown, either way.

Regression: each session's start ran ``mount -o loop`` (3 ms, twice that as an
asynchronous child of the server) and its end ``umount``."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import threading
from pathlib import Path

import anyio
import pytest

from lmc_runtime.sandbox import disk as disk_module
from lmc_runtime.sandbox.disk import WorkDisk

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mkfs.ext4") is None,
    reason="mounting a disk needs root and mkfs.ext4",
)

_SIZE = 32 << 20


def _mount_of(path: Path) -> list[str] | None:
    """``/proc/self/mountinfo``'s fields for the mount on ``path``, if any."""
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        for line in table:
            fields = line.split()
            if fields[4] == str(path):
                return fields
    return None


def _loops_of(image: Path) -> str:
    found = subprocess.run(["losetup", "-j", str(image)], capture_output=True, text=True)
    return found.stdout.strip()


def test_the_disk_is_mounted_without_mount8_and_released_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[tuple[str, ...]] = []

    async def no_process(self: WorkDisk, *argv: str) -> None:
        ran.append(argv)
        raise AssertionError(f"{argv[0]} ran")

    monkeypatch.setattr(WorkDisk, "_run", no_process)
    disk = WorkDisk(tmp_path / "disk", tmp_path / "disk.img", _SIZE)

    async def main() -> None:
        await disk.setup()
        try:
            assert disk.mounted
            fields = _mount_of(disk.path)
            assert fields is not None and "nosuid" in fields[5] and "nodev" in fields[5]
            assert fields[fields.index("-") + 2].startswith("/dev/loop")
            assert _loops_of(disk.image)  # the image is on a loop device
        finally:
            await disk.teardown()

    anyio.run(main)
    assert ran == []
    assert _mount_of(disk.path) is None
    assert _loops_of(disk.image) == "" and not disk.image.exists()


def test_mount8_is_the_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(image: Path, target: Path) -> None:
        raise OSError(2, "no /dev/loop-control here")

    monkeypatch.setattr(disk_module, "mount_image", refused)
    disk = WorkDisk(tmp_path / "disk", tmp_path / "disk.img", _SIZE)

    async def main() -> None:
        await disk.setup()
        try:
            assert disk.mounted and _mount_of(disk.path) is not None
        finally:
            await disk.teardown()

    anyio.run(main)
    assert _mount_of(disk.path) is None


@pytest.mark.parametrize("way", ["in-process", "mount(8)"])
def test_a_start_cancelled_once_mounted_leaves_nothing_mounted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    """The cancel lands after the kernel mounted the image, before the disk
    knew it was mounted (a server shut down while its pool started sessions)."""
    mounted, proceed = anyio.Event(), threading.Event()
    if way == "in-process":
        real = disk_module.mount_image

        def mount_then_linger(image: Path, target: Path) -> None:
            real(image, target)
            anyio.from_thread.run_sync(mounted.set)
            proceed.wait(30)  # until the start is cancelled

        monkeypatch.setattr(disk_module, "mount_image", mount_then_linger)
    else:
        monkeypatch.setattr(disk_module, "mount_image", _refuse)
        mount = shutil.which("mount")
        assert mount is not None
        fifo = tmp_path / "mounted"
        script = tmp_path / "bin" / "mount"
        script.parent.mkdir()
        script.write_text(
            f'#!/bin/sh\n{shlex.quote(mount)} "$@" || exit $?\n'
            f"echo > {shlex.quote(str(fifo))}\nexec sleep 60\n",
            encoding="utf-8",
        )
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{script.parent}:{os.environ['PATH']}")
        os.mkfifo(fifo)
    disk = WorkDisk(tmp_path / "disk", tmp_path / "disk.img", _SIZE)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(disk.setup)
            if way == "in-process":
                with anyio.fail_after(30):
                    await mounted.wait()
            else:
                with anyio.fail_after(30):
                    await anyio.to_thread.run_sync(fifo.read_bytes)
            assert _mount_of(disk.path) is not None and not disk.mounted
            tg.cancel_scope.cancel()
            proceed.set()
        await disk.teardown()

    try:
        anyio.run(main)
    finally:
        if _mount_of(disk.path) is not None:  # never left on the host
            subprocess.run(["umount", "-l", str(disk.path)], check=False)
    assert _mount_of(disk.path) is None and _loops_of(disk.image) == ""


def _refuse(image: Path, target: Path) -> None:
    raise OSError(2, "no /dev/loop-control here")
