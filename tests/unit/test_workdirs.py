"""The owner mark of a Computer's folders, and the sweep that removes those whose
owner has ended (and nothing else)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lmc_runtime.workdirs import OWNER_FILE, WorkDir, sweep

#: Marks a folder as its owner, and ends without removing it.
_DEAD_OWNER = (
    "import os, sys\nfrom lmc_runtime.workdirs import WorkDir\n"
    "print(WorkDir(parent=sys.argv[1]).path, flush=True)\nos._exit(0)"
)


def _left_by_a_dead_owner(parent: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-c", _DEAD_OWNER, str(parent)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return Path(done.stdout.strip())


def test_a_folder_whose_owner_ended_is_swept(tmp_path: Path) -> None:
    """Regression: the lmc-* folders of an owner that was killed were never removed."""
    left = _left_by_a_dead_owner(tmp_path)
    (left / "python").mkdir()
    (left / "python" / "kernel.log").write_text("x")
    assert sweep(tmp_path) == [left]
    assert not left.exists()


def test_a_live_owners_folder_is_kept(tmp_path: Path) -> None:
    work = WorkDir(parent=tmp_path)
    try:
        assert sweep(tmp_path) == []
        assert (work.path / OWNER_FILE).is_file()
    finally:
        work.remove()
    assert not work.path.exists()


def test_folders_without_an_owner_file_or_behind_links_are_kept(tmp_path: Path) -> None:
    """Only a folder proven abandoned goes: none without a mark, none through a link."""
    unmarked = tmp_path / "lmc-unmarked"
    unmarked.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    abandoned = _left_by_a_dead_owner(elsewhere)
    (tmp_path / "lmc-link").symlink_to(abandoned)
    linked_mark = tmp_path / "lmc-linked-mark"
    linked_mark.mkdir()
    (linked_mark / OWNER_FILE).symlink_to(abandoned / OWNER_FILE)
    assert sweep(tmp_path) == []
    assert unmarked.is_dir() and abandoned.is_dir() and linked_mark.is_dir()
    assert os.path.lexists(tmp_path / "lmc-link")
