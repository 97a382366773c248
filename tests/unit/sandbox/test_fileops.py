"""The files API's operations on a session's directory: each one, and each attack
the session's code can mount against the host through them (links, FIFOs, swaps)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.errors import UnsafePath
from lmc_runtime.sandbox.fileops import (
    AlreadyExists,
    BadDestination,
    IsADirectory,
    NoSuchFile,
    NotADirectory,
    NotEmpty,
    Refused,
    _move,
    list_directory,
    make_directory,
    move,
    remove,
    stat_path,
)
from lmc_runtime.sandbox.fileops._ops import MAX_TREE_DEPTH, REMOVE_ROUNDS, KeptChanging
from lmc_runtime.service.problems import problem_for


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
    with pytest.raises(AlreadyExists):
        make_directory(root, "d", parents=False)
    with pytest.raises(AlreadyExists):  # a file is never a folder, parents or not
        make_directory(root, "f", parents=True)


def test_make_directory_needs_its_parent_without_parents(root: Path) -> None:
    with pytest.raises(NoSuchFile):
        make_directory(root, "missing/child", parents=False)
    assert os.listdir(root) == []


def test_make_directory_through_a_file_is_not_a_directory(root: Path) -> None:
    (root / "f").write_text("x")
    with pytest.raises(NotADirectory):
        make_directory(root, "f/child", parents=True)


@pytest.mark.parametrize("parents", [False, True])
def test_make_directory_never_goes_through_a_planted_link(
    root: Path, outside: Path, parents: bool
) -> None:
    """Guards the classic escape: ``link -> /host`` then mkdir ``link/x``."""
    os.symlink(outside, root / "link")
    with pytest.raises(Refused):
        make_directory(root, "link/x", parents=parents)
    with pytest.raises(Refused):
        make_directory(root, "link/deeper/x", parents=parents)
    assert sorted(os.listdir(outside)) == ["secret"]


def test_make_directory_on_a_link_or_fifo_is_refused(root: Path, outside: Path) -> None:
    os.symlink(outside / "new", root / "dangling")
    os.mkfifo(root / "fifo")
    for name in ("dangling", "fifo"):
        with pytest.raises(AlreadyExists):
            make_directory(root, name, parents=True)
    with pytest.raises(Refused):
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


def _swap_for_link(monkeypatch: pytest.MonkeyPatch, folder: Path, target: Path) -> None:
    """Just before the host opens ``folder`` (by name, relative to its parent's
    descriptor), the session's code swaps it for a link to ``target``: the race a
    check-then-open implementation loses."""
    real_open = os.open

    def racing_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if dir_fd is not None and path == folder.name and not folder.is_symlink():
            folder.rename(folder.with_name(folder.name + ".moved"))
            folder.symlink_to(target)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", racing_open)


def test_listing_is_sorted_and_lstats_every_entry(root: Path, outside: Path) -> None:
    (root / "b.txt").write_bytes(b"12345")
    (root / "a").mkdir()
    os.symlink(outside / "secret", root / "link")
    os.mkfifo(root / "fifo")
    listing = list_directory(root, "")
    kinds = [(e.name, e.path, e.kind) for e in listing.entries]
    assert kinds == [
        ("a", "a", "directory"),
        ("b.txt", "b.txt", "file"),
        ("fifo", "fifo", "other"),
        ("link", "link", "symlink"),
    ]
    assert listing.entries[1].size == 5 and not listing.truncated
    assert listing.entries[3].size == len(str(outside / "secret"))  # the link's, not the file's
    (root / "a/inner").write_text("x")
    assert [e.path for e in list_directory(root, "a").entries] == ["a/inner"]


def test_listing_names_that_are_not_utf8_stay_printable(root: Path) -> None:
    """Regression guard: a name of raw bytes made by the session's code would
    otherwise carry lone surrogates that no JSON encoder takes."""
    (root / os.fsdecode(b"caf\xe9")).write_text("")
    (entry,) = list_directory(root, "").entries
    assert entry.name == "caf\ufffd" and entry.kind == "file"
    entry.name.encode("utf-8")


def test_listing_a_huge_folder_is_cut_and_says_so(root: Path) -> None:
    for index in range(7):
        (root / f"f{index}").write_text("")
    listing = list_directory(root, "", limit=5)
    assert len(listing.entries) == 5 and listing.truncated
    assert [e.name for e in listing.entries] == sorted(e.name for e in listing.entries)


def test_listing_never_goes_through_a_link_or_into_a_file(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "link")
    os.mkfifo(root / "fifo")
    (root / "f").write_text("x")
    for path in ("link", "link/", "fifo"):
        with pytest.raises((Refused, UnsafePath)):
            list_directory(root, path)
    with pytest.raises(NotADirectory):
        list_directory(root, "f")
    with pytest.raises(NoSuchFile):
        list_directory(root, "missing")


def test_listing_refuses_a_folder_swapped_for_a_link_mid_walk(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "d/e").mkdir(parents=True)
    _swap_for_link(monkeypatch, root / "d", outside)
    with pytest.raises(Refused):
        list_directory(root, "d/e")
    with pytest.raises(Refused):
        list_directory(root, "d")


def test_stat_says_what_a_file_or_folder_is(root: Path) -> None:
    (root / "d").mkdir()
    (root / "d/f").write_bytes(b"abc")
    info = stat_path(root, "d/f")
    assert (info.path, info.name, info.kind, info.size) == ("d/f", "f", "file", 3)
    assert info.mtime == pytest.approx(os.stat(root / "d/f").st_mtime)
    assert stat_path(root, "d").kind == "directory"
    with pytest.raises(NoSuchFile):
        stat_path(root, "d/missing")


def test_stat_refuses_links_and_fifos_as_target_and_on_the_way(root: Path, outside: Path) -> None:
    os.symlink(outside / "secret", root / "link")
    os.symlink(outside, root / "dirlink")
    os.mkfifo(root / "fifo")
    for path in ("link", "dirlink", "dirlink/secret", "fifo", "fifo/x"):
        with pytest.raises(Refused):
            stat_path(root, path)


def test_stat_refuses_a_folder_swapped_for_a_link_mid_walk(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "d").mkdir()
    (root / "d/secret").write_text("the session's own")
    _swap_for_link(monkeypatch, root / "d", outside)
    with pytest.raises(Refused):
        stat_path(root, "d/secret")


def test_remove_a_file_and_an_empty_folder(root: Path) -> None:
    (root / "f").write_text("x")
    (root / "d").mkdir()
    remove(root, "f", recursive=False)
    remove(root, "d", recursive=False)
    assert os.listdir(root) == []
    with pytest.raises(NoSuchFile):
        remove(root, "f", recursive=False)


def test_remove_a_full_folder_needs_recursive(root: Path) -> None:
    (root / "d/e").mkdir(parents=True)
    (root / "d/e/f").write_text("x")
    with pytest.raises(NotEmpty):
        remove(root, "d", recursive=False)
    assert (root / "d/e/f").exists()
    remove(root, "d", recursive=True)
    assert os.listdir(root) == []


def test_recursive_remove_unlinks_links_inside_and_never_follows_them(
    root: Path, outside: Path
) -> None:
    """Guards the host folder a link inside a removed tree points to."""
    (root / "d/sub").mkdir(parents=True)
    os.symlink(outside, root / "d/dirlink")
    os.symlink(outside / "secret", root / "d/sub/filelink")
    os.mkfifo(root / "d/sub/fifo")
    remove(root, "d", recursive=True)
    assert os.listdir(root) == []
    assert (outside / "secret").read_text() == "host data"


@pytest.mark.parametrize("recursive", [False, True])
def test_remove_refuses_links_and_fifos_as_target_and_on_the_way(
    root: Path, outside: Path, recursive: bool
) -> None:
    os.symlink(outside, root / "dirlink")
    os.symlink(outside / "secret", root / "filelink")
    os.mkfifo(root / "fifo")
    for path in ("dirlink", "filelink", "fifo", "dirlink/secret", "fifo/x"):
        with pytest.raises(Refused):
            remove(root, path, recursive=recursive)
    assert sorted(os.listdir(root)) == ["dirlink", "fifo", "filelink"]
    assert (outside / "secret").read_text() == "host data"


def test_recursive_remove_unlinks_a_folder_swapped_for_a_link_mid_walk(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards the host folder a link swapped in mid-removal points to: the link is
    removed (on the next round), never followed."""
    (root / "d/sub").mkdir(parents=True)
    (root / "d/sub/own").write_text("x")
    _swap_for_link(monkeypatch, root / "d/sub", outside)
    remove(root, "d", recursive=True)
    assert os.listdir(root) == []
    assert (outside / "secret").read_text() == "host data"


def test_recursive_remove_is_bounded_in_depth(root: Path) -> None:
    deep = root / "top" / "/".join(["d"] * (MAX_TREE_DEPTH + 1))
    deep.mkdir(parents=True)
    with pytest.raises(Refused, match="levels deep"):
        remove(root, "top", recursive=True)
    shallow = root / "ok" / "/".join(["d"] * (MAX_TREE_DEPTH - 1))
    shallow.mkdir(parents=True)
    remove(root, "ok", recursive=True)
    assert not (root / "ok").exists()


def test_move_a_file_and_a_folder(root: Path) -> None:
    (root / "f").write_bytes(b"abc")
    (root / "d").mkdir()
    (root / "d/inner").write_text("x")
    info = move(root, "f", "g", overwrite=False)
    assert (info.path, info.name, info.kind, info.size) == ("g", "g", "file", 3)
    assert move(root, "d", "new/place/d2", overwrite=False).kind == "directory"
    assert (root / "new/place/d2/inner").read_text() == "x"
    assert sorted(os.listdir(root)) == ["g", "new"]


@pytest.mark.parametrize("atomic", [True, False])
def test_move_never_replaces_without_overwrite(
    root: Path, monkeypatch: pytest.MonkeyPatch, atomic: bool
) -> None:
    if not atomic:  # the C library or file system without renameat2
        monkeypatch.setattr(_move, "_renameat2", lambda: None)
    (root / "a").write_text("a")
    (root / "b").write_text("b")
    (root / "d").mkdir()
    (root / "e").mkdir()
    for source, destination in (("a", "b"), ("d", "e"), ("a", "d")):
        with pytest.raises(AlreadyExists):
            move(root, source, destination, overwrite=False)
    assert (root / "b").read_text() == "b" and (root / "a").read_text() == "a"


def test_move_with_overwrite_replaces_what_it_may(root: Path) -> None:
    (root / "a").write_text("a")
    (root / "b").write_text("b")
    (root / "d").mkdir()
    (root / "full").mkdir()
    (root / "full/x").write_text("x")
    move(root, "a", "b", overwrite=True)
    assert (root / "b").read_text() == "a" and not (root / "a").exists()
    with pytest.raises(IsADirectory):
        move(root, "b", "d", overwrite=True)
    with pytest.raises(NotADirectory):
        move(root, "d", "b", overwrite=True)
    with pytest.raises(NotEmpty):
        move(root, "d", "full", overwrite=True)


def test_move_a_folder_into_itself_is_refused(root: Path) -> None:
    (root / "d/e").mkdir(parents=True)
    for destination in ("d/x", "d/e/x"):
        with pytest.raises(BadDestination):
            move(root, "d", destination, overwrite=False)
    assert sorted(os.listdir(root / "d")) == ["e"]


def test_move_refuses_links_and_fifos_at_either_end(root: Path, outside: Path) -> None:
    """Guards the host file a planted link points to: never moved, replaced, or reached."""
    (root / "f").write_text("session file")
    os.symlink(outside / "secret", root / "filelink")
    os.symlink(outside, root / "dirlink")
    os.mkfifo(root / "fifo")
    for source, destination in (
        ("filelink", "x"),
        ("fifo", "x"),
        ("dirlink/secret", "x"),
        ("f", "dirlink/secret"),
        ("f", "dirlink/new"),
        ("f", "fifo/new"),
    ):
        with pytest.raises(Refused):
            move(root, source, destination, overwrite=True)
    for destination in ("filelink", "fifo"):
        with pytest.raises(Refused):
            move(root, "f", destination, overwrite=True)
        with pytest.raises(AlreadyExists):
            move(root, "f", destination, overwrite=False)
    assert sorted(os.listdir(outside)) == ["secret"]
    assert (outside / "secret").read_text() == "host data"
    assert (root / "f").read_text() == "session file"


def test_move_refuses_a_destination_folder_swapped_for_a_link_mid_walk(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "f").write_text("session file")
    (root / "d").mkdir()
    _swap_for_link(monkeypatch, root / "d", outside)
    with pytest.raises(Refused):
        move(root, "f", "d/secret", overwrite=True)
    assert (outside / "secret").read_text() == "host data"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder away needs root")
def test_move_makes_missing_destination_folders_for_the_owner(root: Path) -> None:
    (root / "f").write_text("x")
    move(root, "f", "a/b/f", overwrite=False, owner=(54321, 54322))
    for folder in ("a", "a/b"):
        assert os.stat(root / folder).st_uid == 54321


def _refill_before_rmdir(monkeypatch: pytest.MonkeyPatch, folder: Path, times: int) -> list[int]:
    """The session's code adds a file to ``folder`` just before each of the host's
    first ``times`` rmdirs of it: the race of a removal with the code's writes."""
    real_rmdir, done = os.rmdir, [0]

    def racing_rmdir(path: Any, *, dir_fd: int | None = None) -> None:
        if path == folder.name and done[0] < times:
            done[0] += 1
            (folder / f"new{done[0]}").write_text("x")
        real_rmdir(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "rmdir", racing_rmdir)
    return done


def test_recursive_remove_empties_again_a_folder_the_code_writes_into(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards against rmdir's "Directory not empty", from the code's own writes
    during a recursive removal, coming out as an I/O error (503)."""
    (root / "d/sub").mkdir(parents=True)
    (root / "d/sub/own").write_text("x")
    done = _refill_before_rmdir(monkeypatch, root / "d/sub", 3)
    remove(root, "d", recursive=True)
    assert done == [3] and os.listdir(root) == []


def test_recursive_remove_of_a_folder_refilled_without_end_is_a_bounded_conflict(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards the bound: code that refills the folder at every try gets a typed
    conflict (409 directory_not_empty) after REMOVE_ROUNDS, never an I/O error."""
    (root / "d").mkdir()
    done = _refill_before_rmdir(monkeypatch, root / "d", 10**6)
    with pytest.raises(KeptChanging, match="kept changing"):
        remove(root, "d", recursive=True)
    assert done == [REMOVE_ROUNDS]
    assert problem_for(KeptChanging("d", "removed")).status == 409  # type: ignore[union-attr]


def test_mkdir_of_a_folder_the_code_removes_as_it_is_seen_makes_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards against mkdir's EEXIST, then the code's removal of that entry before
    it was looked at, answering 404 for a folder the client asked to make."""
    real_mkdir, raced = os.mkdir, [False]

    def racing_mkdir(path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        if path == "new" and not raced[0]:
            raced[0] = True  # made by the code, and removed again before the stat
            raise FileExistsError(17, "File exists", path)
        real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", racing_mkdir)
    assert make_directory(root, "new", parents=False).kind == "directory"
    assert raced[0] and (root / "new").is_dir()


def test_a_move_whose_destination_the_code_moves_on_at_once_says_what_moved(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards against a move that was done answering 404: the session's code took
    the destination away before the host looked at it."""
    (root / "a.txt").write_text("12345")
    real_rename = os.rename

    def racing_rename(src: Any, dst: Any, *, src_dir_fd: int, dst_dir_fd: int) -> None:
        real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
        real_rename(root / "b.txt", root / "elsewhere.txt")  # the code's next step

    monkeypatch.setattr(os, "rename", racing_rename)
    monkeypatch.setattr(_move, "_renameat2", lambda: None)
    info = move(root, "a.txt", "b.txt", overwrite=False)
    assert (info.path, info.kind, info.size) == ("b.txt", "file", 5)
    assert (root / "elsewhere.txt").read_text() == "12345"
