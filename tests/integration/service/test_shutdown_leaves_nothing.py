"""A server stopped (SIGTERM) while sessions are still starting leaves nothing
behind: no mount, process or cgroup of theirs, and its data directory can be
removed. The pool starts sessions from the moment the server runs, so a
shutdown soon after the start catches some of them half-way.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime.sandbox.stale import mounts_under, stale_cgroups

from .server import Server, running_server, wait_for_pool

#: The longest any one wait here takes, in seconds.
WAIT = 60


def _processes_of(server: Server) -> list[str]:
    """Live processes the server left: in its process session (it was started in
    one of its own), or naming its data directory (a kernel's bwrap, which has a
    session of its own). A zombie is not one: it has ended, and is reaped by init."""
    data_dir = str(server.data_dir)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue  # it ended meanwhile
        state, session = fields[0], int(fields[3])
        if state != "Z" and (session == server.process.pid or data_dir in cmdline):
            found.append(f"{entry} {state} {cmdline[:200]}")
    return found


def _stop(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    # uvicorn re-raises SIGTERM once its graceful shutdown is over.
    assert server.process.wait(timeout=WAIT) in (0, -signal.SIGTERM), server.log()
    assert "lmc serve stopped" in server.log(wait=WAIT)


def _assert_nothing_left(server: Server, session_ids: list[str]) -> None:
    """After the server exited: no mount under its data directory, no process of
    its, no cgroup of ``session_ids``, and its data directory can be removed."""
    mounts = mounts_under(server.data_dir)
    try:
        processes = _processes_of(server)
        cgroups = [str(group.dirs) for name in session_ids for group in stale_cgroups(name)]
        removal: list[str] = []
        shutil.rmtree(server.data_dir, onerror=lambda _f, path, exc: removal.append(f"{path}"))
    finally:  # what the test found is not left on the host either
        for point in mounts:
            subprocess.run(["umount", "-l", str(point)], check=False)
    left = {"mounts": mounts, "processes": processes, "cgroups": cgroups, "unremovable": removal}
    assert left == {key: [] for key in left}, server.log()


@contextlib.contextmanager
def _mounts_reported(tmp_path: Path) -> Iterator[tuple[dict[str, str], int]]:
    """``PATH`` for the server, in which ``mount`` is the real one, followed by
    writing where it mounted to a FIFO and by a long exit (the window in which a
    shutdown used to kill mount(8) after the kernel had mounted the disk); and
    the FIFO, open for reading."""
    mount = shutil.which("mount")
    assert mount is not None
    fifo, bin_dir = tmp_path / "mounted", tmp_path / "bin"
    os.mkfifo(fifo)
    bin_dir.mkdir()
    (bin_dir / "mount").write_text(
        "#!/bin/sh\n"
        f'{shlex.quote(mount)} "$@" || exit $?\n'
        'for target; do :; done\nprintf "%s\\n" "$target" >' + shlex.quote(str(fifo)) + "\n"
        f"exec sleep {WAIT}\n",
        encoding="utf-8",
    )
    (bin_dir / "mount").chmod(0o755)
    # Read and write: opening it never blocks, and a writer never waits for a reader.
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        yield {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}, fd
    finally:
        os.close(fd)


def _next_mount(fd: int) -> Path:
    """The disk the next ``mount`` reports (a bounded wait)."""
    readable, _, _ = select.select([fd], [], [], WAIT)
    assert readable, f"no session's disk was mounted in {WAIT} s"
    return Path(os.read(fd, 4096).decode().splitlines()[0])


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mkfs.ext4") is None,
    reason="a session's disk is a mounted image only as root, with mkfs.ext4",
)
def test_a_shutdown_while_a_sessions_disk_is_being_mounted_unmounts_it(tmp_path: Path) -> None:
    with (
        _mounts_reported(tmp_path) as (env, fd),
        running_server("--pool-size", "2", env=env) as server,
    ):
        disk = _next_mount(fd)
        assert disk.parent.parent == server.data_dir / "sessions"
        assert disk in mounts_under(server.data_dir)  # the kernel mounted it; mount(8) runs
        _stop(server)
        _assert_nothing_left(server, [disk.parent.name])


@pytest.mark.parametrize("when", ["answering", "first_warm"])
def test_a_shutdown_while_the_pool_fills_leaves_nothing(when: str) -> None:
    """``answering``: as soon as it answers /healthz (its pool is starting);
    ``first_warm``: once one warm session is ready (the others still start)."""
    with running_server("--pool-size", "3") as server:
        if when == "first_warm":
            wait_for_pool(server, 1)
        sessions_dir = server.data_dir / "sessions"
        seen = sorted(entry.name for entry in sessions_dir.iterdir())
        _stop(server)
        _assert_nothing_left(server, seen)
