"""Pausing where a session has no cgroup: each of its processes gets SIGSTOP,
and SIGCONT on resume, only if it is still the process that was stopped."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lmc_runtime.e2b.pausing import Frozen, freeze, thaw

from ...lifeline import tie

pytestmark = pytest.mark.timeout(60)


def _session(root: Path) -> Any:
    """What :func:`freeze` reads of a session: a sandbox without a cgroup or a
    user of its own, whose processes name its folder on their command line."""
    return SimpleNamespace(sandbox=SimpleNamespace(_cgroup=None, identity=None, root=root))


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A shell (and its sleeps) writing a line to a file 20 times a second."""
    ticks = tmp_path / "ticks"
    script = 'while :; do echo t >> "$0/ticks"; sleep 0.05; done'
    process = subprocess.Popen(["sh", "-c", script, str(tmp_path)], start_new_session=True)
    tie(process)  # the loop ends with this process, however it ends
    try:
        yield process, ticks
    finally:
        process.kill()
        process.wait(timeout=10)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen in 10 s"
        time.sleep(0.02)


def test_sigstop_stands_a_session_still_and_sigcont_lets_it_go_on(
    writer: tuple[subprocess.Popen[bytes], Path], tmp_path: Path
) -> None:
    process, ticks = writer
    _wait(lambda: _size(ticks) >= 4, "writing")
    frozen = freeze(_session(tmp_path))
    try:
        assert frozen.cgroup is None
        assert process.pid in {pid for pid, _ in frozen.stopped}
        stood = _size(ticks)
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline:
            assert _size(ticks) <= stood + 2, "a stopped process went on writing"
            time.sleep(0.05)
        stood = _size(ticks)
    finally:
        thaw(frozen)
    _wait(lambda: _size(ticks) >= stood + 4, "writing again")


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_thaw_leaves_a_process_that_took_a_stopped_ones_pid_alone() -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        other.send_signal(signal.SIGSTOP)  # stopped by someone else
        _wait(lambda: _state(other.pid) == "T", "the stop")
        # As if ``other``'s pid had been stopped by a pause, but with another start
        # time: it is a new process that took a recycled pid, not the session's.
        thaw(Frozen(stopped={(other.pid, 1)}))
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            assert _state(other.pid) == "T", "thaw woke a process it had not stopped"
            time.sleep(0.02)
    finally:
        other.kill()
        other.wait(timeout=10)
