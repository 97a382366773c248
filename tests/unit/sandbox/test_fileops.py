"""The files API's operations on a session's directory: each one, and each attack
the session's code can mount against the host through them (links, FIFOs, swaps)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lmc_runtime.errors import (
    FileExists,
    PathNotDirectory,
    PathRefused,
    SessionFileNotFound,
    UnsafePath,
)
from lmc_runtime.sandbox.fileops import make_directory


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host folder next to the session's directory, which nothing may touch."""
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "secret").write_text("host data")
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def test_make_directory_makes_one_folder_and_says_what_it_is(root: Path) -> None:
    info = make_directory(root, "new", parents=False)
    assert (root / "new").is_dir()
    assert (info.path, info.name, info.kind, info.size > 0) == ("new", "new", "directory", True)


def test_make_directory_with_parents_makes_the_whole_way(root: Path) -> None:
    info = make_directory(root, "a/b/c", parents=True)
    assert (root / "a/b/c").is_dir() and info.path == "a/b/c" and info.name == "c"
    again = make_directory(root, "a/b/c", parents=True)  # an existing folder is fine then
    assert again.kind == "directory"


def test_make_directory_refuses_what_exists_without_parents(root: Path) -> None:
    (root / "d").mkdir()
    (root / "f").write_text("x")
    with pytest.raises(FileExists):
        make_directory(root, "d", parents=False)
    with pytest.raises(FileExists):  # a file is never a folder, parents or not
        make_directory(root, "f", parents=True)


def test_make_directory_needs_its_parent_without_parents(root: Path) -> None:
    with pytest.raises(SessionFileNotFound):
        make_directory(root, "missing/child", parents=False)
    assert os.listdir(root) == []


def test_make_directory_through_a_file_is_not_a_directory(root: Path) -> None:
    (root / "f").write_text("x")
    with pytest.raises(PathNotDirectory):
        make_directory(root, "f/child", parents=True)


@pytest.mark.parametrize("parents", [False, True])
def test_make_directory_never_goes_through_a_planted_link(
    root: Path, outside: Path, parents: bool
) -> None:
    """Guards the classic escape: ``link -> /host`` then mkdir ``link/x``."""
    os.symlink(outside, root / "link")
    with pytest.raises(PathRefused):
        make_directory(root, "link/x", parents=parents)
    with pytest.raises(PathRefused):
        make_directory(root, "link/deeper/x", parents=parents)
    assert sorted(os.listdir(outside)) == ["secret"]


def test_make_directory_on_a_link_or_fifo_is_refused(root: Path, outside: Path) -> None:
    os.symlink(outside / "new", root / "dangling")
    os.mkfifo(root / "fifo")
    for name in ("dangling", "fifo"):
        with pytest.raises(FileExists):
            make_directory(root, name, parents=True)
    with pytest.raises(PathRefused):
        make_directory(root, "fifo/x", parents=True)
    assert not (outside / "new").exists()


@pytest.mark.parametrize("path", ["../escape", "/abs", "a//b", "./a", "", "a/../b"])
def test_make_directory_refuses_paths_that_could_escape(root: Path, path: str) -> None:
    with pytest.raises(UnsafePath):
        make_directory(root, path, parents=True)
    assert os.listdir(root) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder away needs root")
def test_made_folders_belong_to_the_owner(root: Path) -> None:
    """The session's code runs as its own uid: the folders made for it are its own."""
    owner = (54321, 54322)
    make_directory(root, "existing", parents=False)
    make_directory(root, "a/b", parents=True, owner=owner)
    make_directory(root, "c", parents=False, owner=owner)
    for folder in ("a", "a/b", "c"):
        info = os.stat(root / folder)
        assert (info.st_uid, info.st_gid) == owner
    assert os.stat(root / "existing").st_uid == os.geteuid()
