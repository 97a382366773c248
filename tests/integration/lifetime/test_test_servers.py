"""No server the tests start outlives the test process that started it, SIGKILLed.

Each test runs ``server_owner.py``, which starts a server with the tests' own
harness (``lmc serve``, replicas behind HAProxy, a Kernel Gateway, PostgreSQL,
``lmc mcp --http``, Chromium through Playwright) and says the pids of the
servers and of their processes; the test SIGKILLs it, as pytest-timeout or CI
would a worker, and waits (bounded, on each pid's end) for every one of them to
be gone, and for their process groups and sessions to be empty.

The servers are held on the lifeline of ``tests/lifeline.py``, whose watcher
ends too. Playwright's driver needs none: it reads a pipe from the test process
and closes its browsers when the pipe ends.

Nor does a server leave a mount: ``lmc serve``'s reaper releases its sessions'
disks once it is gone. The owner's temporary files (its TMPDIR: data
directories, sockets, browser profiles), which a SIGKILLed owner cannot remove,
are removed after each test.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from lmc_runtime.procs import proc_stat
from lmc_runtime.sandbox import sandbox_available
from lmc_runtime.sandbox.stale import clean_stale_sessions, mounts_under

from ...postgres_cluster import PostgresCluster
from ...waiters import process_ended
from ..scale.cluster import HAPROXY

#: The console tests' browser (not imported from there: that imports Playwright).
CHROMIUM = "/usr/bin/chromium"

REPO = Path(__file__).resolve().parents[3]
#: Bounds the start of a server under load, and each process's end.
_GUARD = 90.0


def _unavailable(kind: str) -> str | None:
    if kind in ("serve", "cluster") and not sandbox_available().available:
        return "lmc serve needs bubblewrap here"
    if kind == "cluster" and not Path(HAPROXY).is_file():
        return f"HAProxy is not installed ({HAPROXY})"
    if kind == "postgres":
        return PostgresCluster.unavailable()
    if kind == "gateway" and importlib.util.find_spec("kernel_gateway") is None:
        return "jupyter-kernel-gateway is not installed"
    if kind == "browser":
        if importlib.util.find_spec("playwright") is None:
            return "playwright is not installed"
        if not Path(CHROMIUM).is_file():
            return f"Chromium is not installed ({CHROMIUM})"
    return None


@pytest.fixture
def scratch() -> Iterator[Path]:
    """The owners' temporary folder (their TMPDIR), removed after the test: the
    servers' data directories and sockets, which a SIGKILLed owner leaves."""
    folder = Path(tempfile.mkdtemp(prefix="lmc-o"))  # short: sockets live in it
    os.chmod(folder, 0o711)  # sandboxes and PostgreSQL run as users of their own
    yield folder
    for sessions in folder.glob("*/*/sessions"):  # what a failure left mounted
        anyio.run(clean_stale_sessions, sessions)
    shutil.rmtree(folder)


@pytest.fixture
def owner(scratch: Path) -> Iterator[list[subprocess.Popen[str]]]:
    """Started owners, killed if still running when the test ends."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=_GUARD)


def _said(process: subprocess.Popen[str]) -> dict[str, object]:
    """The owner's line (bounded: a server's start)."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        assert selector.select(_GUARD), f"the owner said nothing in {_GUARD} s"
    line = process.stdout.readline()
    assert line, f"the owner ended (status {process.wait(_GUARD)}) before saying its pids"
    said = json.loads(line)
    assert isinstance(said, dict)
    return said


def _members(leaders: list[int]) -> list[int]:
    """The live processes whose process group or session is one of ``leaders``."""
    found = []
    for entry in os.listdir("/proc"):
        stat = proc_stat(entry) if entry.isdigit() else None
        if stat is not None and stat[0] != "Z" and (stat[1] in leaders or stat[2] in leaders):
            found.append(int(entry))
    return found


def _wait_empty(leaders: list[int]) -> list[int]:
    """Wait (bounded, reading /proc) until nothing is in ``leaders``' groups and
    sessions; what still is."""
    deadline = time.monotonic() + _GUARD
    while (left := _members(leaders)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _kill(leaders: list[int], pids: list[int]) -> None:
    """End what a failed test left, so that the run goes on clean."""
    for pid in [*leaders, *pids]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    for pid in _members(leaders):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("kind", ["serve", "cluster", "gateway", "postgres", "mcp", "browser"])
def test_a_server_ends_with_the_sigkilled_test_process_that_started_it(
    owner: list[subprocess.Popen[str]], scratch: Path, kind: str
) -> None:
    reason = _unavailable(kind)
    if reason is not None:
        pytest.skip(reason)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.lifetime.server_owner", kind],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    owner.append(process)
    said = _said(process)
    leaders, pids = said["leaders"], said["pids"]
    assert isinstance(leaders, list) and isinstance(pids, list), said
    assert set(leaders) <= set(pids), said
    try:
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=_GUARD) == -signal.SIGKILL
        deadline = time.monotonic() + _GUARD
        outlived = [p for p in pids if not process_ended(p, max(0, deadline - time.monotonic()))]
        assert not outlived, f"{kind}: {outlived} of {pids} outlived the test process"
        left = _wait_empty(leaders)
        assert not left, f"{kind}: {left} still in the servers' groups or sessions"
        # Nor anything of theirs that is not a process: lmc serve's sessions' disks.
        mounted = mounts_under(scratch)
        assert not mounted, f"{kind}: {mounted} still mounted once its processes ended"
        watcher = said["watcher"]
        if kind != "browser":
            assert isinstance(watcher, int), said
            assert process_ended(watcher, _GUARD), "the lifeline's watcher outlived its work"
    finally:
        _kill(leaders, pids)
