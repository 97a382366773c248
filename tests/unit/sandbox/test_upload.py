"""SessionUpload: pieces to a temporary file, renamed over the target only when complete."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from lmc_runtime.errors import UnsafePath
from lmc_runtime.sandbox.upload import SessionUpload


def test_commit_replaces_the_target_only_when_complete(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d/f.bin").write_bytes(b"old")
    upload = SessionUpload(tmp_path, "d/f.bin")
    upload.open()
    upload.write(b"new ")
    upload.write(b"content")
    assert (tmp_path / "d/f.bin").read_bytes() == b"old"
    upload.commit()
    upload.abort()  # harmless afterwards
    assert (tmp_path / "d/f.bin").read_bytes() == b"new content"
    assert upload.size == 11
    assert os.listdir(tmp_path / "d") == ["f.bin"]


def test_abort_leaves_nothing_and_keeps_the_old_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"old")
    upload = SessionUpload(tmp_path, "f")
    upload.open()
    upload.write(b"partial")
    upload.abort()
    assert os.listdir(tmp_path) == ["f"] and (tmp_path / "f").read_bytes() == b"old"


def test_special_targets_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    os.symlink("/etc/passwd", tmp_path / "link")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(tmp_path / "sock"))
        for name in ("fifo", "link", "sock"):
            with pytest.raises(UnsafePath):
                SessionUpload(tmp_path, name).open()
        with pytest.raises(IsADirectoryError):
            SessionUpload(tmp_path, "folder").open()
        with pytest.raises(UnsafePath):
            SessionUpload(tmp_path, "link/x").open()
    assert sorted(os.listdir(tmp_path)) == ["fifo", "folder", "link", "sock"]


def test_a_target_turned_special_before_commit_is_refused(tmp_path: Path) -> None:
    upload = SessionUpload(tmp_path, "f")
    upload.open()
    upload.write(b"data")
    os.mkfifo(tmp_path / "f")
    with pytest.raises(UnsafePath):
        upload.commit()
    assert os.listdir(tmp_path) == ["f"]
