"""Host-side access to folders an interpreter can write (lmc_runtime/hostfs.py)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
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


_LOCKED_TREE = """
import json, os, sys
from pathlib import Path
from lmc_runtime.hostfs import remove_tree

base = Path(sys.argv[1])
root, outside = base / "session", base / "outside"
outside.mkdir(mode=0o750)
(outside / "keep").write_text("kept")
for folder in ("locked/inner", "ro/sub", "wx/deep/er"):
    (root / folder).mkdir(parents=True, exist_ok=True)
for name in ("locked/inner/big", "ro/f", "ro/sub/f", "wx/f", "wx/deep/er/f"):
    (root / name).write_bytes(b"x" * 4096)
os.symlink(outside, root / "locked/inner/link")
os.symlink(outside, root / "ro/link")
for folder, mode in (("locked/inner", 0o000), ("locked", 0o000), ("ro/sub", 0o555),
                     ("ro", 0o555), ("wx/deep/er", 0o100), ("wx/deep", 0o300), ("wx", 0o300)):
    os.chmod(root / folder, mode)
left = remove_tree(root)
print(json.dumps({
    "left": left,
    "exists": os.path.lexists(root),
    "outside_mode": oct(outside.stat().st_mode & 0o777),
    "kept": (outside / "keep").read_text(),
}))
"""


def _as_owner(tmp: Path) -> dict[str, object]:
    """Run ``_LOCKED_TREE`` as an unprivileged user (root bypasses the modes)."""
    import json
    import subprocess
    import sys

    prefix: list[str] = []
    if os.geteuid() == 0:
        os.chown(tmp, 65534, 65534)
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    done = subprocess.run(
        [*prefix, sys.executable, "-c", _LOCKED_TREE, str(tmp)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.fixture
def owned_tmp() -> Iterator[Path]:
    """A folder another user can own (pytest's tmp_path is root's, 0700)."""
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="lmc-rm-"))
    os.chmod(tmp, 0o755)
    try:
        yield tmp
    finally:
        for folder, _, _ in os.walk(tmp):
            os.chmod(folder, 0o700)
        shutil.rmtree(tmp, ignore_errors=True)


def test_remove_tree_unlocks_folders_the_code_made_unsearchable_or_unwritable(
    owned_tmp: Path,
) -> None:
    """Regression: on an unprivileged server, folders the code set to 000 or 0555
    (or 0300) survived teardown, files and all: remove_tree never gave the owner
    its permissions back. Links in them are still never followed (the folder
    outside keeps its mode and file)."""
    found = _as_owner(owned_tmp)
    assert found == {"left": [], "exists": False, "outside_mode": "0o750", "kept": "kept"}


def test_remove_tree_reports_what_it_could_not_remove_and_goes_on(owned_tmp: Path) -> None:
    """Regression: an entry that cannot be removed raised out of remove_tree's
    top-level loop (or was only logged), so its callers reported a cleanup as done;
    now every other entry still goes and what is left is returned."""
    if os.geteuid() != 0:
        pytest.skip("needs root to plant a folder of another user's")
    root = owned_tmp / "session"
    (root / "foreign").mkdir(parents=True)
    (root / "foreign" / "theirs").write_text("root's: nothing can unlock it")
    os.chown(root, 65534, 65534)
    found = _as_owner(owned_tmp)
    assert found["exists"] is True
    left = found["left"]
    assert isinstance(left, list) and len(left) == 1 and "foreign/theirs" in left[0], left
    assert sorted(os.listdir(root)) == ["foreign"]
    assert found["outside_mode"] == "0o750" and found["kept"] == "kept"
