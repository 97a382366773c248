"""Limits that hold for the whole session, attacked through a real ``lmc serve``
(root and unprivileged): the disk limit covers every host-backed folder the
sandbox can write and the spill files of truncated outputs; an idle session's
background work stays within its CPU quota; a fork bomb ends with
``process_limit`` and leaves no task behind."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.service.server import Server, final_status, output

from .harness import Account, serve_as

MIB = 1 << 20
DISK = 8 * MIB
#: Room for the session's small host-only files (connection files, logs, cells).
SLACK = 2 * MIB

#: Writes up to 300 MiB into every writable folder of the sandbox that is not
#: private memory (tmpfs): the bind mounts the host backs with its own disk.
FILL_EVERY_MOUNT = r"""
import os
targets = []
for line in open("/proc/self/mountinfo"):
    before, _, after = line.partition(" - ")
    fields, tail = before.split(), after.split()
    point, options, fstype = fields[4], fields[5].split(","), tail[0]
    if "rw" in options and fstype not in ("tmpfs", "proc", "devtmpfs", "devpts", "mqueue"):
        if os.path.isdir(point) and not point.startswith(("/dev", "/proc")):
            targets.append(point)
# The working directory last: it is the one everybody already counts.
targets.sort(key=lambda point: point == os.getcwd())
written = 0
chunk = b"x" * (1 << 20)
for target in targets:
    for number in range(16):
        if written >= 300 << 20:
            break
        try:
            with open(os.path.join(target, f"fill{number}.bin"), "wb") as f:
                for _ in range(32):
                    f.write(chunk)
                    f.flush()
                    written += 1 << 20
        except OSError as exc:
            print("refused in", target, exc.errno)
            break
print("TARGETS", targets, "WRITTEN_MIB", written >> 20)
"""


def host_bytes(root: Path) -> int:
    """Bytes ``root`` takes on the host's own disk: a filesystem mounted under it
    counts by its image's allocated blocks, not by what it holds."""
    device = root.stat().st_dev
    total = 0
    for top, dirs, files in os.walk(root):
        kept = []
        for name in [*dirs, *files]:
            try:
                info = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            total += info.st_blocks * 512
            if name in dirs and info.st_dev == device:
                kept.append(name)
        dirs[:] = kept
    return total


def usage(server: Server, session_id: str) -> dict[str, Any]:
    with server.client() as client:
        body = client.get(f"/v1/sessions/{session_id}").json()
    return dict(body.get("usage") or {})


def statuses(messages: list[dict[str, Any]]) -> set[Any]:
    return {(m.get("extras") or {}).get("status") for m in messages}


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    """The server under attack, shared by the module's tests on purpose: each test
    makes sessions of its own, and one server facing them all is the setting."""
    with serve_as(account, "--pool-size", "0", "--max-sessions", "2") as running:
        yield running


def session_root(server: Server, session_id: str) -> Path:
    root = server.data_dir / "sessions" / session_id
    assert root.is_dir(), f"no session directory at {root}"
    return root


def test_writes_to_every_writable_mount_count_against_the_disk_limit(
    server: Server, account: Account
) -> None:
    """Guards the disk limit against writes outside the working directory (the
    runtime folder once took 300 MiB while 7 KiB of 8 MiB was reported)."""
    sid = server.create(limits={"disk_bytes": DISK, "file_size_bytes": 64 * MIB})
    try:
        messages = server.execute(sid, FILL_EVERY_MOUNT)
        text = output(messages)
        assert "WRITTEN_MIB" in text, text
        written = int(text.split("WRITTEN_MIB")[1].split()[0]) * MIB
        actual = host_bytes(session_root(server, sid))
        reported = usage(server, sid).get("disk_bytes")
        assert isinstance(reported, int), usage(server, sid)
        if account.root:
            # Enforced: the writes fail once the session's disk is full.
            assert actual <= DISK + SLACK, (text, actual, reported)
            assert reported <= DISK, (text, reported)
        else:
            # Measured: everything written is counted and the limit reported.
            assert reported >= written - SLACK, (text, written, reported, actual)
        assert "disk_limit" in statuses(messages), (text, statuses(messages))
        # The session still answers.
        assert output(server.execute(sid, "print('alive')")) == "alive\n"
    finally:
        server.delete(sid)


def test_spill_files_stay_within_the_disk_limit(server: Server) -> None:
    """Guards the disk limit against the host's own spill files: each truncated
    execution once kept up to 64 MiB, so an 8 MiB session reached 256 MiB."""
    sid = server.create(limits={"disk_bytes": DISK, "output_bytes": 10_000})
    flood = 'import sys\nline = "y" * 1023 + "\\n"\nfor _ in range(16 << 10):\n    sys.stdout.write(line)\n'
    try:
        for _ in range(4):  # 64 MiB of output in all
            messages = server.execute(sid, flood)
            assert "truncated" in statuses(messages), statuses(messages)
            assert final_status(messages) is not None
            assert len(output(messages)) < 40_000
        actual = host_bytes(session_root(server, sid))
        reported = usage(server, sid).get("disk_bytes")
        assert actual <= DISK + SLACK, actual
        assert isinstance(reported, int) and reported <= DISK + SLACK, reported
        assert output(server.execute(sid, "print('alive')")) == "alive\n"
    finally:
        server.delete(sid)


def _cgroup_dirs(controller: str, session_id: str) -> list[Path]:
    mount = Path("/sys/fs/cgroup") / controller
    return [p for p in mount.rglob(f"lmc-{session_id}-*") if p.is_dir()]


def _cpu_seconds(session_id: str) -> float:
    for path in _cgroup_dirs("cpuacct", session_id):
        return int((path / "cpuacct.usage").read_text()) / 1e9
    for path in _cgroup_dirs("unified", session_id):
        for line in (path / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) / 1e6
    raise AssertionError(f"no cgroup found for session {session_id}")


#: Two cores' worth of background work: a spinning thread in the interpreter and
#: a spinning child process; the execution itself returns at once.
SPIN = """
import subprocess, sys, threading
def spin():
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()
child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
print("spinning")
"""


def test_an_idle_session_stays_within_its_cpu_quota(server: Server, account: Account) -> None:
    """Guards the session-wide CPU quota: background work once burned whole
    cores while the session was idle, between executions."""
    if not account.root:
        pytest.skip(
            "an unprivileged server has no cgroup here, so no CPU quota can be set "
            "(rlimits cap CPU time per process, not a rate)"
        )
    sid = server.create()
    try:
        assert output(server.execute(sid, SPIN)) == "spinning\n"
        start_cpu, start = _cpu_seconds(sid), time.monotonic()
        # Until 3 s of CPU are used, or 6 s of wall time have passed.
        while _cpu_seconds(sid) - start_cpu < 3.0 and time.monotonic() - start < 6.0:
            time.sleep(0.05)
        rate = (_cpu_seconds(sid) - start_cpu) / (time.monotonic() - start)
        assert rate < 1.3, f"the idle session used {rate:.2f} cores (quota: 1 core)"
        info = usage(server, sid)
        assert "cpu quota" in str(info.get("limits_by")), info
    finally:
        server.delete(sid)


def _session_tasks(account: Account, session_id: str) -> int:
    """Processes of the session: its cgroup's, or the server user's (but the server)."""
    if account.root:
        found: set[str] = set()
        for path in _cgroup_dirs("pids", session_id) + _cgroup_dirs("unified", session_id):
            found.update((path / "cgroup.procs").read_text().split())
        return len(found)
    listed = subprocess.run(
        ["ps", "-o", "pid=", "-u", account.name], capture_output=True, text=True, check=False
    ).stdout.split()
    return len(listed)


def test_a_fork_bomb_ends_with_process_limit_and_leaves_nothing(
    server: Server, account: Account
) -> None:
    """Guards the process limit's aftermath: a fork bomb once ended ``ok`` and
    left 500 tasks running under an unprivileged server."""
    sid = server.create(limits={"processes": 64, "wall_seconds": 60})
    try:
        assert output(server.execute(sid, "print('ready')")) == "ready\n"
        before = _session_tasks(account, sid)
        messages = server.execute(sid, "import os\nwhile True:\n    os.fork()\n")
        assert final_status(messages) == "process_limit", statuses(messages)
        assert (messages[-1].get("extras") or {}).get("state_lost") is True
        deadline = time.monotonic() + 15
        while (after := _session_tasks(account, sid)) > before + 2:
            assert time.monotonic() < deadline, f"{after} tasks left (before the bomb: {before})"
            time.sleep(0.1)
        assert output(server.execute(sid, "print('alive')")) == "alive\n"
    finally:
        server.delete(sid)
