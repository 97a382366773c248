"""The lifeline's watcher: what it holds ends when the pipe ends, what was released
does not, and a process held after the lifeline was cut ends at once."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import anyio
import pytest

from lmc_runtime.lifeline import Lifeline

from ..waiters import process_ended

_GUARD = 30.0


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """``sleep`` processes in sessions of their own, killed and reaped at the end."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait(timeout=_GUARD)


def _sleeper(started: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(["sleep", "600"], start_new_session=True)
    started.append(process)
    return process


def test_the_end_of_the_pipe_ends_what_is_held_and_not_what_was_released(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    lifeline = Lifeline()
    held, released = _sleeper(sleepers), _sleeper(sleepers)
    lifeline.hold(held.pid)
    lifeline.hold(released.pid)
    lifeline.release(released.pid)
    anyio.run(lifeline.aclose)
    assert held.wait(timeout=_GUARD) == -9
    assert released.poll() is None


def test_a_process_held_once_the_lifeline_is_cut_ends_at_once(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    lifeline = Lifeline()
    watcher = lifeline.cut()
    assert watcher is None  # never started: nothing was held
    late = _sleeper(sleepers)
    lifeline.hold(late.pid)
    assert late.wait(timeout=_GUARD) == -9


def test_the_watcher_ends_with_the_pipe(sleepers: list[subprocess.Popen[bytes]]) -> None:
    lifeline = Lifeline()
    lifeline.hold(_sleeper(sleepers).pid)
    pid = lifeline.watcher_pid
    assert pid is not None
    anyio.run(lifeline.aclose)
    assert process_ended(pid, _GUARD)
