"""Timeouts and interrupts against Python code and callers that misbehave."""

from __future__ import annotations

import contextlib
import threading
import time

from lmc_runtime import Computer, Message, Timeouts, UsageError

from ..conftest import Result, run
from .conftest import GUARD, Background, assert_well_formed


def test_a_timeout_smaller_than_kernel_startup_on_the_first_run_does_not_count_startup() -> None:
    with Computer(timeouts=Timeouts(execution=0.05)) as comp:
        result = run(comp, "print('first')")
    assert_well_formed(result)
    assert result.status == "ok" and result.output == "first\n"


def test_a_startup_failure_is_reported_on_every_run() -> None:
    with Computer(timeouts=Timeouts(execution=1, startup=0.05)) as comp:
        for _ in range(2):
            replies = list(comp.run("python", "print(1)"))
            assert replies and "did not become ready within 0.05 s" in replies[0].content


def test_a_startup_failure_still_ends_with_active_line_null() -> None:
    """A backend that fails to start is answered like any run: a notice, then
    the final message."""
    with Computer(timeouts=Timeouts(execution=1, startup=0.05)) as comp:
        result = run(comp, "print(1)")
    assert_well_formed(result)


def test_a_child_process_ignoring_sigint_does_not_defeat_the_timeout(c: Computer) -> None:
    run(c, "kept = 'k'")
    result = run(
        c,
        "import subprocess\nsubprocess.run(['bash', '-c', 'trap \"\" INT; sleep 30'])",
        timeout=1.0,
    )
    assert_well_formed(result)
    assert result.status == "timeout"
    assert run(c, "print(kept)").output == "k\n"
    shell = run(c, "!bash -c 'trap \"\" INT; echo started; sleep 30'", timeout=1.0)
    assert_well_formed(shell)
    assert shell.status == "timeout" and "started" in shell.output


def test_os_system_ignoring_sigint_gets_the_kernel_restarted(c: Computer) -> None:
    run(c, "1")  # the kernel is up: only the run itself is timed
    start = time.monotonic()
    result = run(c, 'import os\nos.system("bash -c \'trap \\"\\" INT; sleep 30\'")', timeout=1.0)
    assert time.monotonic() - start < 8
    assert_well_formed(result)
    assert result.status == "timeout" and result.final.extras["state_lost"] is True  # type: ignore[index]
    assert run(c, "print('ok')").output == "ok\n"


def test_interrupt_before_the_computer_was_ever_opened_is_harmless() -> None:
    fresh = Computer()
    fresh.interrupt()
    fresh.close()


def test_interrupting_an_unknown_language_does_not_interrupt_python(c: Computer) -> None:
    """interrupt('cobol') is refused (UsageError) and never stops the Python code
    running meanwhile."""
    running = Background(
        c, "import time\nprint('started', flush=True)\ntime.sleep(2)\nprint('finished')"
    )
    running.wait_printed()
    with contextlib.suppress(UsageError):
        c.interrupt("cobol")
    result = running.result()
    assert result.status == "ok" and result.output == "started\nfinished\n"


def test_a_fast_execution_read_slowly_is_not_reported_as_timed_out(c: Computer) -> None:
    """The deadline is the code's, not the caller's: print('a') with timeout=0.5,
    read by a caller that spends 1 s on the first message, ends ok."""
    messages: list[Message] = []
    for m in c.run("python", "print('a')", timeout=0.5):
        if not messages:
            time.sleep(1.0)  # the caller is busy with the first message
        messages.append(m)
    result = Result(messages)
    assert_well_formed(result)
    assert result.status == "ok"


def test_a_slow_consumer_does_not_turn_an_interrupt_into_a_restart(c: Computer) -> None:
    """After a timeout's interrupt, a caller slower than interrupt_grace does not
    make it a restart: the code stopped at once, and the stop ladder watches the
    interpreter, not the caller's pace."""
    run(c, "kept = 1")
    messages: list[Message] = []
    code = "import time\nprint('a', flush=True)\ntime.sleep(30)"
    for m in c.run("python", code, timeout=0.5):
        if len(messages) < 2:
            time.sleep(1.2)  # longer than interrupt_grace (1 s)
        messages.append(m)
    result = Result(messages)
    assert_well_formed(result)
    assert result.status == "timeout"
    assert result.final.extras["state_lost"] is False  # type: ignore[index]
    assert run(c, "print(kept)").output == "1\n"


def test_a_held_open_run_does_not_block_the_next_run_forever(c: Computer) -> None:
    """A run whose stream is held open but not read still times out (its watchdog
    does not wait for the caller), so the next run on the Computer proceeds."""
    held = c.run("python", "print('held', flush=True)\nwhile True: pass", timeout=1.0)
    next(held)
    done = threading.Event()
    box: dict[str, Result] = {}

    def second() -> None:
        box["r"] = run(c, "print('second')")
        done.set()

    thread = threading.Thread(target=second, daemon=True)
    thread.start()
    try:
        assert done.wait(4), "second run still blocked 3 s after the first run's timeout"
    finally:
        # Unblock the second run so the session survives this test.
        held.close()  # type: ignore[attr-defined]
        thread.join(GUARD)
    assert box["r"].output == "second\n"


def test_breaking_out_of_run_repeatedly_stops_the_code_and_keeps_state(c: Computer) -> None:
    run(c, "kept = 41")
    for i in range(4):
        start = time.monotonic()
        for message in c.run(
            "python", f"print('go{i}', flush=True)\nimport time\nwhile True: time.sleep(0.01)"
        ):
            first = message
            break
        assert time.monotonic() - start < 5
        assert first.content == f"go{i}\n"
    for _ in range(2):
        stream = c.run("python", "print('spin', flush=True)\nwhile True: pass")
        next(stream)
        del stream  # closed by refcounting
    result = run(c, "print(kept + 1)")
    assert_well_formed(result)
    assert result.output == "42\n"
