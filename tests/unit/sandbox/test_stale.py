"""Stale session cleanup: mountinfo parsing, cgroup matching, and never following links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lmc_runtime.hostfs import remove_tree as real_remove_tree
from lmc_runtime.sandbox import stale as stale_module
from lmc_runtime.sandbox.stale import clean_stale_sessions, mounts_under, stale_cgroups

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_mounts_under_decodes_escapes_and_sorts_deepest_first(tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "42 27 7:0 / /data/sessions/a\\040b/work rw - ext4 /dev/loop0 rw\n"
        "43 42 7:1 / /data/sessions/a\\040b/work/inner rw - ext4 /dev/loop1 rw\n"
        "44 27 7:2 / /data/sessions-other/work rw - ext4 /dev/loop2 rw\n"
        "45 27 0:5 / /data rw - tmpfs tmpfs rw\n"
    )
    found = mounts_under(Path("/data/sessions"), mountinfo)
    assert found == [
        Path("/data/sessions/a b/work/inner"),
        Path("/data/sessions/a b/work"),
    ]


def test_stale_cgroups_match_only_that_sessions_names(tmp_path: Path) -> None:
    for controller in ("memory", "pids"):
        for name in ("lmc-abc-0123abcd", "lmc-abc-x", "lmc-abcd-0123abcd", "other"):
            (tmp_path / controller / name).mkdir(parents=True)
    parents = [(1, "memory", tmp_path / "memory"), (1, "pids", tmp_path / "pids")]
    (group,) = stale_cgroups("abc", parents)
    assert group.version == 1
    assert group.dirs == {
        "memory": tmp_path / "memory/lmc-abc-0123abcd",
        "pids": tmp_path / "pids/lmc-abc-0123abcd",
    }


async def test_cleanup_never_follows_links_planted_in_a_session(tmp_path: Path) -> None:
    """Regression guard: a link in a session's work dir (or a session entry that is a
    link) must be removed as a link, never have its target's files deleted."""
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep")
    sessions = tmp_path / "sessions"
    work = sessions / "0123456789abcdef" / "work"
    work.mkdir(parents=True)
    os.symlink(precious, work / "link")
    os.symlink(precious, sessions / "fedcba9876543210")
    stale = await clean_stale_sessions(sessions)
    assert stale.found == stale.cleaned == ["0123456789abcdef", "fedcba9876543210"]
    assert stale.left == {}
    assert os.listdir(sessions) == []
    assert (precious / "keep.txt").read_text() == "keep"


async def test_a_cleanup_that_leaves_files_says_what_it_left(tmp_path: Path) -> None:
    """Regression: a stale session folder that could not be removed (a folder the
    code locked, on an unprivileged server) was counted as cleaned up all the
    same; now its cleanup is a failure that names what was left."""
    sessions = tmp_path / "sessions"
    (sessions / "0123456789abcdef" / "work" / "kept").mkdir(parents=True)
    (sessions / "fedcba9876543210" / "work").mkdir(parents=True)
    with pytest.MonkeyPatch.context() as patch:

        def remove_tree(root: Path) -> list[str]:
            if root.name == "0123456789abcdef":
                return ["work/kept: Permission denied"]
            return real_remove_tree(root)

        patch.setattr(stale_module, "remove_tree", remove_tree)
        stale = await clean_stale_sessions(sessions)
    assert stale.found == ["0123456789abcdef", "fedcba9876543210"]
    assert stale.cleaned == ["fedcba9876543210"]
    assert stale.left == {"0123456789abcdef": ["work/kept: Permission denied"]}
