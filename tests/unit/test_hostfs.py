"""Host-side access to folders an interpreter can write (lmc_runtime/hostfs.py)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import anyio
import pytest

from lmc_runtime.hostfs import HostDir, UnsafeEntry, remove_tree


def test_read_refuses_links_fifos_hard_links_and_oversized_files(tmp_path: Path) -> None:
    """Regression (security): the HTML screenshot was read back by path, so a
    link swapped in for it returned /proc/self/environ, the token included."""
    secret = tmp_path / "secret"
    secret.write_text("TOKEN")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "ok.png").write_bytes(b"\x89PNG data")
    os.symlink(secret, shared / "link.png")
    os.mkfifo(shared / "fifo.png")
    os.link(shared / "ok.png", shared / "twin.png")
    (shared / "big.png").write_bytes(b"x" * 100)
    with HostDir(shared) as folder:
        for name in ("link.png", "fifo.png", "twin.png"):
            with pytest.raises(UnsafeEntry):
                folder.read(name, 1 << 20)
        with pytest.raises(UnsafeEntry):
            folder.read("big.png", 10)
        os.unlink(shared / "twin.png")
        assert folder.read("ok.png", 1 << 20) == b"\x89PNG data"


def test_only_sockets_are_adopted(tmp_path: Path) -> None:
    shared, own = tmp_path / "shared", tmp_path / "own"
    shared.mkdir()
    own.mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(shared / "k-1"))
    os.symlink("/etc/passwd", shared / "k-2")
    with HostDir(shared) as a, HostDir(own) as b:
        a.adopt_socket("k-1", b)
        with pytest.raises(UnsafeEntry):
            a.adopt_socket("k-2", b)
    listener.close()
    assert (own / "k-1").is_socket() and not os.path.lexists(own / "k-2")
    assert Path("/etc/passwd").exists()


def test_wait_for_wakes_when_entries_stop_being_placeholders(tmp_path: Path) -> None:
    async def main() -> None:
        with HostDir(tmp_path) as folder:
            folder.reserve("s-1")
            assert (tmp_path / "s-1").is_file()

            async def bind_later() -> None:
                await anyio.sleep(0.05)
                os.unlink(tmp_path / "s-1")
                os.mkfifo(tmp_path / "s-1")

            async with anyio.create_task_group() as tg:
                tg.start_soon(bind_later)
                await folder.wait_for(["s-1"], timeout=10)
            with pytest.raises(TimeoutError):
                await folder.wait_for(["never"], timeout=0.1)

    anyio.run(main)


def test_remove_tree_survives_deep_trees_and_never_follows_links(tmp_path: Path) -> None:
    """Regression: a session can make a tree thousands of folders deep, which
    shutil.rmtree (recursive) cannot remove: RecursionError at teardown."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("kept")
    root = tmp_path / "session"
    root.mkdir()
    os.symlink(outside, root / "link")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(3000):  # deeper than PATH_MAX: made through descriptors
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.symlink(outside, "link", dir_fd=fd)
    os.close(os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    os.close(fd)
    remove_tree(root)
    assert not root.exists()
    assert (outside / "keep").read_text() == "kept"
