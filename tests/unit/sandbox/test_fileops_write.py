"""Writing a session's file in place from the host (envd's uploads): the file
keeps its inode, missing folders are made, and a link, FIFO, socket, folder or
hard-linked file at the path or on the way is refused, never written through."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from lmc_runtime.sandbox import fileops


def _write(root: Path, relpath: str, data: bytes) -> fileops.InPlaceWrite:
    writer = fileops.InPlaceWrite(root, relpath, None)
    writer.open()
    writer.write(data)
    writer.close()
    return writer


def test_a_new_file_and_its_folders_are_made(tmp_path: Path) -> None:
    writer = _write(tmp_path, "a/b/c.txt", b"hello")
    assert writer.made and writer.size == 5
    assert (tmp_path / "a/b/c.txt").read_bytes() == b"hello"


def test_an_existing_file_is_written_over_in_place(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"a much longer old content")
    inode = target.stat().st_ino
    writer = _write(tmp_path, "f.txt", b"new")
    assert not writer.made
    assert target.read_bytes() == b"new" and target.stat().st_ino == inode


def test_a_failed_write_removes_what_it_made_only(tmp_path: Path) -> None:
    made = fileops.InPlaceWrite(tmp_path, "made.txt", None)
    made.open()
    made.write(b"part")
    made.close(failed=True)
    assert not (tmp_path / "made.txt").exists()
    (tmp_path / "kept.txt").write_bytes(b"old")
    kept = fileops.InPlaceWrite(tmp_path, "kept.txt", None)
    kept.open()
    kept.close(failed=True)
    assert (tmp_path / "kept.txt").exists()


def test_links_on_the_way_or_at_the_path_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    root = tmp_path / "root"
    root.mkdir()
    (root / "dir_link").symlink_to(outside)
    (root / "file_link").symlink_to(outside / "secret")
    (root / "dangling").symlink_to(outside / "new")
    for relpath in ("dir_link/secret", "dir_link/new", "file_link", "dangling"):
        with pytest.raises((fileops.Refused, fileops.NotADirectory)):
            _write(root, relpath, b"pwned")
    assert (outside / "secret").read_bytes() == b"secret"
    assert not (outside / "new").exists()


def test_fifos_sockets_folders_and_hard_links_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        (tmp_path / "dir").mkdir()
        (tmp_path / "one").write_bytes(b"1")
        os.link(tmp_path / "one", tmp_path / "two")
        for relpath, error in [
            ("fifo", fileops.Refused),
            ("sock", fileops.Refused),
            ("dir", fileops.IsADirectory),
            ("two", fileops.Refused),
        ]:
            with pytest.raises(error):
                _write(tmp_path, relpath, b"x")
    assert (tmp_path / "one").read_bytes() == b"1"


def test_attributes_are_replaced_on_the_open_file(tmp_path: Path) -> None:
    writer = fileops.InPlaceWrite(tmp_path, "m.txt", None)
    writer.open()
    try:
        writer.replace_attributes("user.t.", {"a": "1", "b": "2"})
        writer.replace_attributes("user.t.", {"b": "3"})
    except OSError as exc:
        pytest.skip(f"no user extended attributes here: {exc}")
    finally:
        writer.close()
    assert sorted(os.listxattr(tmp_path / "m.txt")) == ["user.t.b"]
    assert os.getxattr(tmp_path / "m.txt", "user.t.b") == b"3"
