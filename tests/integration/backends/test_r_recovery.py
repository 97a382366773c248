"""R: timeouts, interrupts, quit() and a dead R process, on a real IRkernel."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends.r import RBackend

from ..conftest import run

pytestmark = pytest.mark.skipif(
    not RBackend().availability().available, reason="R and IRkernel are not installed"
)


@pytest.fixture(scope="module")
def r() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        yield c


@pytest.mark.parametrize("code", ["Sys.sleep(100)", "repeat {}"], ids=["sleep", "busy-loop"])
def test_a_timeout_stops_the_code_and_the_state_survives(r: Computer, code: str) -> None:
    run(r, "kept <- 7", "r")
    result = run(r, f'cat("partial\\n")\n{code}', "r", timeout=1.5)
    assert result.output.startswith("partial\n")
    assert "timed out after 1.5 s at line 2" in result.output
    assert result.status == "timeout"
    assert result.final.extras["state_lost"] is False  # type: ignore[index]
    assert run(r, "kept", "r").output == "[1] 7"


def test_interrupt_from_another_thread_stops_sys_sleep(r: Computer) -> None:
    timer = threading.Timer(1.0, r.interrupt)
    timer.start()
    try:
        result = run(r, "Sys.sleep(100)", "r", timeout=60)
    finally:
        timer.cancel()
    assert result.status == "interrupted"
    assert "interrupted at line 1" in result.output
    assert run(r, 'cat("ok\\n")', "r").output == "ok\n"


def test_quit_restarts_the_kernel_and_says_the_state_is_lost(r: Computer) -> None:
    run(r, "gone <- 1", "r")
    result = run(r, "quit()", "r")
    assert result.status == "restarted"
    assert "state was lost" in result.output
    assert run(r, 'exists("gone")', "r").output == "[1] FALSE"


def test_a_killed_r_process_is_reported_and_restarted(r: Computer) -> None:
    result = run(r, "tools::pskill(Sys.getpid(), tools::SIGKILL)", "r")
    assert result.status == "kernel_died"
    assert "SIGKILL" in result.output and "restarted" in result.output
    assert result.final.extras["state_lost"] is True  # type: ignore[index]
    assert run(r, "1 + 1", "r").output == "[1] 2"
