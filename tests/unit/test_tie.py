"""The tests' own lifeline (``tests/lifeline.py``): only a session leader is tied,
and a tied process is released as soon as it ends, whoever reaps it, so that its
pid, which the system may give to another process, is never signalled."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator

import pytest

from .. import lifeline
from ..waiters import process_ended

_GUARD = 30.0


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait(timeout=_GUARD)


def _held() -> set[int]:
    return set(lifeline._ours()._held)


def _released(pid: int) -> bool:
    """Whether ``pid`` is released within the guard (the releasing thread's end)."""
    for thread in threading.enumerate():
        if thread.name == f"tie-{pid}":
            thread.join(_GUARD)
    return pid not in _held()


def test_a_process_in_the_tests_session_is_refused(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    process = subprocess.Popen(["sleep", "600"])
    sleepers.append(process)
    with pytest.raises(ValueError, match="start_new_session"):
        lifeline.tie(process)
    assert process.pid not in _held()


@pytest.mark.parametrize("reap", ["wait", "poll"])
def test_a_tied_process_is_released_once_it_ends_however_it_is_reaped(
    sleepers: list[subprocess.Popen[bytes]], reap: str
) -> None:
    process = subprocess.Popen(["sleep", "600"], start_new_session=True)
    sleepers.append(process)
    lifeline.tie(process)
    assert process.pid in _held()
    assert lifeline.watcher_pid() is not None
    process.kill()
    if reap == "wait":
        assert process.wait(timeout=_GUARD) == -9
    else:
        assert process_ended(process.pid, _GUARD)
        assert process.poll() == -9
    assert _released(process.pid)


def test_a_tied_process_still_running_stays_held(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    process = subprocess.Popen(["sleep", "600"], start_new_session=True)
    sleepers.append(process)
    lifeline.tie(process)
    releasing = next(t for t in threading.enumerate() if t.name == f"tie-{process.pid}")
    releasing.join(0.5)  # it waits for the end, not less
    assert releasing.is_alive()
    assert process.poll() is None
    assert process.pid in _held()
