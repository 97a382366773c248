"""A dead interpreter is detected, reported with its state lost, and restarted."""

from __future__ import annotations

import os
import signal

import pytest

from lmc_runtime import Computer

from .harness import Result, assert_ends_once, process_gone, run, wait_for
from .languages import Profile


def _assert_fresh_and_working(computer: Computer, lang: Profile) -> None:
    """The variable set before is gone, and the new interpreter runs code."""
    gone = run(computer, lang, lang.show_kept)
    assert_ends_once(gone)
    assert "kept-value" not in gone.text, gone.describe()
    alive = run(computer, lang, lang.print_line("alive"))
    assert_ends_once(alive)
    assert alive.status == "ok" and alive.output == "alive\n", alive.describe()


def _pid(computer: Computer, lang: Profile) -> int:
    result = run(computer, lang, lang.print_pid)
    assert result.status == "ok", result.describe()
    return int(result.output)


def test_an_interpreter_killed_by_its_code_is_reported_and_restarted(
    lang: Profile, computer: Computer
) -> None:
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    result = run(computer, lang, lang.kill_self)
    assert_ends_once(result)
    assert result.status == "kernel_died", result.describe()
    assert result.extras.get("state_lost") is True, result.describe()
    assert "SIGKILL" in result.text, result.describe()
    _assert_fresh_and_working(computer, lang)


@pytest.mark.local_only("the test kills the interpreter by its host process id")
def test_an_interpreter_killed_between_runs_is_reported_by_the_next_run(
    lang: Profile, computer: Computer
) -> None:
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    pid = _pid(computer, lang)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: process_gone(pid), f"the end of process {pid}")
    result = run(computer, lang, lang.print_line("back"))
    assert_ends_once(result)
    # The death is told whichever noticed it first: the watcher between runs
    # (a notice, then the run), or this run itself (its final status).
    told = [m for m in result.messages if m.status == "kernel_died"]
    assert told, f"the death was not reported:\n{result.describe()}"
    assert all((m.extras or {}).get("state_lost") is True for m in told), result.describe()
    assert "SIGKILL" in result.text, result.describe()
    if result.status != "kernel_died":
        assert result.status == "ok" and result.output == "back\n", result.describe()
    _assert_fresh_and_working(computer, lang)
    assert _pid(computer, lang) != pid


def _assert_restarted(result: Result) -> None:
    assert_ends_once(result)
    assert result.status == "restarted", result.describe()
    assert result.extras.get("state_lost") is True, result.describe()
    assert [m for m in result.notices if m.status == "restarted"], result.describe()


def test_code_that_ends_its_interpreter_restarts_it_and_says_so(
    lang: Profile, computer: Computer
) -> None:
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    result = run(computer, lang, lang.print_line("bye") + "\n" + lang.exit_self)
    _assert_restarted(result)
    assert result.output.startswith("bye\n"), result.describe()
    _assert_fresh_and_working(computer, lang)


def test_restart_on_request_loses_the_state(lang: Profile, computer: Computer) -> None:
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    computer.restart(lang.name)
    _assert_fresh_and_working(computer, lang)
