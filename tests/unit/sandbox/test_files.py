"""open_in_session: no ``..``, no absolute paths, never a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lmc_runtime.errors import UnsafePath
from lmc_runtime.sandbox import open_in_session
from lmc_runtime.sandbox.files import safe_parts


@pytest.mark.parametrize(
    "relpath",
    [
        "",
        "/etc/passwd",
        "../x",
        "a/../../x",
        "a//b",
        "./a",
        "a/./b",
        "a\x00b",
        "a/",
        "a" * 256,
        "d/" + "é" * 128,
    ],
)
def test_unsafe_paths_are_refused(relpath: str) -> None:
    with pytest.raises(UnsafePath):
        safe_parts(relpath)


def test_plain_paths_split_into_parts() -> None:
    assert safe_parts("a/b/c.txt") == ["a", "b", "c.txt"]
    assert safe_parts("x" * 255) == ["x" * 255]


def test_write_then_read_with_parents(tmp_path: Path) -> None:
    with open_in_session(tmp_path, "d/e/f.bin", "wb", make_parents=True) as handle:
        handle.write(b"data")
    with open_in_session(tmp_path, "d/e/f.bin", "rb") as handle:
        assert handle.read() == b"data"


def test_missing_parents_are_not_created_unless_asked(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_in_session(tmp_path, "nope/f.bin", "wb")


def test_a_symlink_as_the_file_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(secret)
    for mode in ("rb", "wb", "ab"):
        with pytest.raises(UnsafePath):
            open_in_session(root, "link", mode)
    assert secret.read_text() == "s"


def test_a_symlinked_directory_on_the_path_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("s")
    root = tmp_path / "root"
    root.mkdir()
    (root / "dir").symlink_to(outside)
    with pytest.raises(UnsafePath):
        open_in_session(root, "dir/f", "rb")
    with pytest.raises(UnsafePath):
        open_in_session(root, "dir/new", "wb", make_parents=True)
    assert not (outside / "new").exists()


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises((UnsafePath, OSError)):
        open_in_session(tmp_path, "pipe", "rb")


def test_a_hard_link_is_refused_and_not_truncated(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("keep")
    root = tmp_path / "root"
    root.mkdir()
    os.link(outside, root / "hard")
    with pytest.raises(UnsafePath):
        open_in_session(root, "hard", "wb")
    assert outside.read_text() == "keep"


def test_bad_mode_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        open_in_session(tmp_path, "x", "r+")
