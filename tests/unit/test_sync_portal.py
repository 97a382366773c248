"""The sync layer's portal: interrupting its start never hangs the process."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

from lmc_runtime import sync
from lmc_runtime.sync import start_portal


def _portal_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "lmc-portal"}


@pytest.fixture
def new_portal_threads() -> Callable[[], set[threading.Thread]]:
    """The portal threads started since the test began and still alive: a Computer
    another test left open keeps its own portal, which is not this test's to end."""
    before = _portal_threads()
    return lambda: _portal_threads() - before


class _InterruptedOnce(Future[Any]):
    """A future whose first ``result()`` is cut by a Ctrl-C, as a signal would cut it."""

    interrupted = False

    def result(self, timeout: float | None = None) -> Any:
        if not _InterruptedOnce.interrupted:
            _InterruptedOnce.interrupted = True
            raise KeyboardInterrupt
        return super().result(timeout)


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
