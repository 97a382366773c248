"""What a limit leaves behind, attacked through a real ``lmc serve`` (root and
unprivileged): after a limit or a timeout ends a run, nothing the code started
keeps running, while the interpreter and its state stay; a disk out of inodes
(or a full /tmp) is a ``disk_limit``, and the runs after it are never internal
errors."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.service.server import Server, final_status, output

from .harness import Account, serve_as

MIB = 1 << 20


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    with serve_as(account, "--pool-size", "0", "--max-sessions", "2") as running:
        yield running


def _running(marker: str) -> list[int]:
    """Processes on the host whose command line holds ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in argv and state != b"Z":
            found.append(int(name))
    return found


def _until_gone(marker: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while left := _running(marker):
        assert time.monotonic() < deadline, f"{len(left)} processes left running: {left}"
        time.sleep(0.05)


def _until_running(marker: str, seconds: float = 10.0) -> None:
    """Return once a process with ``marker`` runs: a background job the run
    started forks, then execs, and the run may end in between."""
    deadline = time.monotonic() + seconds
    while not _running(marker):
        assert time.monotonic() < deadline, f"nothing with {marker} ran in {seconds} s"
        time.sleep(0.05)


def _marker() -> str:
    return "7" + str(secrets.randbelow(10**8)).zfill(8)


def test_cpu_limit_kills_what_the_run_left_running(server: Server, account: Account) -> None:
    """Regression: a run ended by ``cpu_limit`` left its background CPU burners
    running (a whole core, until the session was deleted)."""
    if not account.root:
        pytest.skip("an unprivileged server has no cgroup here, so no CPU time limit")
    sid = server.create(languages=["shell", "python"], limits={"cpu_seconds": 1})
    mark = _marker()
    try:
        assert output(server.execute(sid, "kept = 41\nprint('set')")) == "set\n"
        code = f"for i in 1 2; do sh -c 'while :; do :; done' burner-{mark} & done; wait"
        messages = server.execute(sid, code, language="shell", timeout=30)
        assert final_status(messages) == "cpu_limit", messages[-3:]
        _until_gone(mark)
        assert output(server.execute(sid, "print(kept + 1)")) == "42\n"
        # (bash may first say its jobs were killed)
        assert output(server.execute(sid, "echo shell", language="shell")).endswith("shell\n")
    finally:
        server.delete(sid)


def test_a_timeout_kills_what_the_run_left_running(server: Server) -> None:
    """Regression: a run ended by its timeout left a ``setsid`` child (and a
    plain background one) running; the interpreter's state must stay."""
    sid = server.create(languages=["shell", "python"])
    mark = _marker()
    try:
        assert output(server.execute(sid, "kept = 41\nprint('set')")) == "set\n"
        started = (
            "import subprocess, time\n"
            f"subprocess.Popen(['setsid', 'sleep', '{mark}'])\n"
            f"subprocess.Popen(['sleep', '{mark}1'])\n"
            "time.sleep(100)\n"
        )
        messages = server.execute(sid, started, timeout=2)
        assert final_status(messages) == "timeout", messages[-3:]
        _until_gone(mark)
        assert output(server.execute(sid, "print(kept + 1)")) == "42\n"
        # A shell run's own background job, too.
        messages = server.execute(sid, f"sleep {mark}2 &\nsleep 100", language="shell", timeout=2)
        assert final_status(messages) == "timeout", messages[-3:]
        _until_gone(mark)
        # What an ordinary run leaves in the background is the code's to keep.
        messages = server.execute(sid, f"sleep {mark}3 &", language="shell")
        assert final_status(messages) == "ok"
        _until_running(f"{mark}3")
    finally:
        server.delete(sid)


#: Empty files until the disk refuses one more.
FILL_INODES = """
import os
os.makedirs("inodes", exist_ok=True)
n = 0
try:
    while True:
        open(f"inodes/{n}", "w").close()
        n += 1
except OSError as exc:
    print("made", n, exc.errno)
"""


def test_a_disk_out_of_inodes_is_a_disk_limit(server: Server, account: Account) -> None:
    """Regression: a disk whose inodes the code used up ended ``ok``, and every
    JavaScript run after it failed as an internal error (``OSError(28)``)."""
    if not account.root:
        pytest.skip("an unprivileged server measures bytes on the host's disk: no inode limit")
    sid = server.create(languages=["python", "shell", "javascript"], limits={"disk_bytes": 8 * MIB})
    try:
        messages = server.execute(sid, FILL_INODES, timeout=60)
        assert "made" in output(messages), output(messages)
        assert final_status(messages) == "disk_limit", messages[-3:]
        for language, code in (("javascript", "console.log('js')"), ("shell", "echo sh")):
            status = final_status(server.execute(sid, code, language=language))
            assert status in ("ok", "disk_limit"), (language, status)
        messages = server.execute(sid, "import shutil; shutil.rmtree('inodes'); print('gone')")
        assert output(messages) == "gone\n"
        messages = server.execute(sid, "console.log('js')", language="javascript")
        assert output(messages) == "js\n" and final_status(messages) == "ok"
    finally:
        server.delete(sid)


def test_a_full_tmp_is_a_disk_limit(server: Server) -> None:
    """Regression: filling /tmp (a memory folder capped at the disk's size) ended ``ok``."""
    sid = server.create(languages=["shell"], limits={"disk_bytes": 8 * MIB})
    try:
        code = "head -c 20000000 /dev/zero > /tmp/fill; rm -f /tmp/fill"
        messages = server.execute(sid, code, language="shell")
        assert final_status(messages) == "disk_limit", messages[-3:]
        assert final_status(server.execute(sid, "echo ok", language="shell")) == "ok"
    finally:
        server.delete(sid)
