"""Copying a session's folder tree from the host (checkpoints and forks):
links, FIFOs and sockets planted by the code are left out, never followed; the
byte budget holds; an existing entry is never written through."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import pytest

from lmc_runtime.sandbox.fileops._copy import copy_tree, empty_tree


def _tree(root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "deep.txt").write_text("deep")
    (root / "top.bin").write_bytes(b"x" * 1000)
    os.chmod(root / "top.bin", 0o600)


def test_files_and_folders_are_copied_with_their_modes(tmp_path: Path) -> None:
    source, target = tmp_path / "src", tmp_path / "dst"
    source.mkdir()
    target.mkdir()
    _tree(source)
    copied = copy_tree(source, target, budget=None)
    assert (target / "a" / "b" / "deep.txt").read_text() == "deep"
    assert (target / "top.bin").read_bytes() == b"x" * 1000
    assert (target / "top.bin").stat().st_mode & 0o777 == 0o600
    assert copied.bytes == 1004 and copied.skipped == 0


def test_links_fifos_and_sockets_are_left_out_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("host only")
    source, target = tmp_path / "src", tmp_path / "dst"
    source.mkdir()
    target.mkdir()
    (source / "to_dir").symlink_to(secret)
    (source / "to_file").symlink_to(secret / "key")
    os.mkfifo(source / "fifo")
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(source / "sock"))
        copied = copy_tree(source, target, budget=None)
    finally:
        listener.close()
    assert sorted(os.listdir(target)) == []
    assert copied.skipped == 4


def test_a_link_as_the_destination_is_refused_not_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("unchanged")
    source, target = tmp_path / "src", tmp_path / "dst"
    source.mkdir()
    target.mkdir()
    (source / "victim").write_text("overwritten")
    (target / "victim").symlink_to(outside / "victim")
    with pytest.raises(FileExistsError):
        copy_tree(source, target, budget=None)
    assert (outside / "victim").read_text() == "unchanged"


def test_past_the_budget_is_enospc(tmp_path: Path) -> None:
    source, target = tmp_path / "src", tmp_path / "dst"
    source.mkdir()
    target.mkdir()
    _tree(source)
    with pytest.raises(OSError) as caught:
        copy_tree(source, target, budget=500)
    assert caught.value.errno == errno.ENOSPC


def test_empty_tree_keeps_the_folder_and_never_follows_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("kept")
    folder = tmp_path / "work"
    folder.mkdir()
    _tree(folder)
    (folder / "link").symlink_to(outside)
    empty_tree(folder)
    assert folder.is_dir() and os.listdir(folder) == []
    assert (outside / "kept").read_text() == "kept"


@pytest.mark.parametrize("in_kernel", [True, False], ids=["copy_file_range", "read-write"])
def test_large_files_copy_whole_and_the_budget_holds_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_kernel: bool
) -> None:
    """Data is copied in the kernel (copy_file_range) where it can, else read and
    written (a filesystem that refuses it): the same bytes, the same budget."""
    if not in_kernel:

        def refused(*args: object) -> int:
            raise OSError(errno.EXDEV, "cross-device")

        monkeypatch.setattr(os, "copy_file_range", refused)
    source, target = tmp_path / "src", tmp_path / "dst"
    source.mkdir()
    target.mkdir()
    data = os.urandom(3 * (1 << 20) + 7)
    (source / "big").write_bytes(data)
    copied = copy_tree(source, target, budget=len(data))
    assert (target / "big").read_bytes() == data and copied.bytes == len(data)
    again = tmp_path / "again"
    again.mkdir()
    with pytest.raises(OSError) as caught:
        copy_tree(source, again, budget=len(data) - 1)
    assert caught.value.errno == errno.ENOSPC
