"""The sync layer's portal: interrupting its start never hangs the process."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

from lmc_runtime import sync
from lmc_runtime.sync import start_portal


@pytest.fixture
def new_portal_threads(monkeypatch: pytest.MonkeyPatch) -> Callable[[], set[threading.Thread]]:
    """The portal threads this test's own thread started and that are still alive.
    Regression: counting every ``lmc-portal`` thread also counted one that a
    Computer another test left open started meanwhile, from a thread of its own."""
    test_thread = threading.current_thread()
    started: list[threading.Thread] = []

    class Recorded(threading.Thread):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if threading.current_thread() is test_thread and self.name == "lmc-portal":
                started.append(self)

    monkeypatch.setattr(sync.threading, "Thread", Recorded)
    return lambda: {thread for thread in started if thread.is_alive()}


class _InterruptedOnce(Future[Any]):
    """A future whose first ``result()`` is cut by a Ctrl-C, as a signal would cut it."""

    interrupted = False

    def result(self, timeout: float | None = None) -> Any:
        if not _InterruptedOnce.interrupted:
            _InterruptedOnce.interrupted = True
            raise KeyboardInterrupt
        return super().result(timeout)


class _InterruptedWhenReady(Future[Any]):
    """A future whose first ``result()`` is cut by a Ctrl-C just as the portal is ready."""

    interrupted = False

    def result(self, timeout: float | None = None) -> Any:
        value = super().result(timeout)
        if not _InterruptedWhenReady.interrupted:
            _InterruptedWhenReady.interrupted = True
            raise KeyboardInterrupt
        return value


@pytest.mark.timeout(30)
def test_ctrl_c_as_the_portal_becomes_ready_stops_it_too(
    monkeypatch: pytest.MonkeyPatch, new_portal_threads: Callable[[], set[threading.Thread]]
) -> None:
    """Regression: the Ctrl-C was taken for a failure of the event loop's start
    (the future was done), so it was raised without stopping the portal."""
    monkeypatch.setattr(sync, "Future", _InterruptedWhenReady)
    with pytest.raises(KeyboardInterrupt), start_portal():
        pytest.fail("the body must not run after an interrupted start")
    assert _InterruptedWhenReady.interrupted
    assert new_portal_threads() == set()


@pytest.mark.timeout(30)
def test_ctrl_c_while_the_portal_starts_stops_it_and_is_raised(
    monkeypatch: pytest.MonkeyPatch, new_portal_threads: Callable[[], set[threading.Thread]]
) -> None:
    """Regression: anyio's start_blocking_portal joined a portal thread that was never
    told to stop, so a Ctrl-C during ``Computer()``'s start hung the process."""
    monkeypatch.setattr(sync, "Future", _InterruptedOnce)
    with pytest.raises(KeyboardInterrupt), start_portal():
        pytest.fail("the body must not run after an interrupted start")
    assert _InterruptedOnce.interrupted
    assert new_portal_threads() == set()


def test_the_portal_runs_calls_and_its_thread_ends_on_exit(
    new_portal_threads: Callable[[], set[threading.Thread]],
) -> None:
    with start_portal() as portal:
        assert portal.call(lambda: threading.current_thread().name) == "lmc-portal"
    assert new_portal_threads() == set()


def test_an_error_in_the_body_stops_the_portal_too(
    new_portal_threads: Callable[[], set[threading.Thread]],
) -> None:
    with pytest.raises(ValueError, match="boom"), start_portal():
        raise ValueError("boom")
    assert new_portal_threads() == set()
