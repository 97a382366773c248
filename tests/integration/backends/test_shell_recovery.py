"""bash: interrupts and timeouts stop the whole job; exits and crashes restart the shell."""

from __future__ import annotations

import secrets
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts

from ..conftest import run


@pytest.fixture
def bash(tmp_path: Path) -> Iterator[Computer]:
    with Computer(cwd=tmp_path, timeouts=Timeouts(interrupt_grace=1.0)) as c:
        yield c


def _alive(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, timeout=30)
    return found.stdout.split()


def _notices(result: object) -> str:
    return "".join(
        m.content
        for m in result.messages  # type: ignore[attr-defined]
        if m.format == "output" and str(m.content).startswith("[lmc]")
    )


def test_sleep_interrupted_from_another_thread_then_echo_ok_keeps_cwd(
    bash: Computer, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    assert run(bash, "cd sub\nkept=yes", "bash").status == "ok"
    timer = threading.Timer(1.0, bash.interrupt)
    timer.start()
    try:
        result = run(bash, "echo start\nsleep 100\necho never", "bash")
    finally:
        timer.cancel()
    assert result.status == "interrupted"
    assert "never" not in result.output
    assert "interrupted at line 2" in _notices(result)
    assert result.final.extras is not None and result.final.extras["state_lost"] is False
    after = run(bash, "echo ok\npwd\necho $kept", "bash")
    assert after.output == f"ok\n{tmp_path / 'sub'}\nyes\n"


def test_sleep_stopped_by_a_timeout_then_echo_ok_in_the_same_shell(bash: Computer) -> None:
    run(bash, "cd /\nmark=1", "bash")
    result = run(bash, "sleep 100", "bash", timeout=1)
    assert result.status == "timeout"
    assert "timed out after 1 s at line 1" in _notices(result)
    assert run(bash, "echo ok; pwd; echo $mark", "bash").output == "ok\n/\n1\n"


def test_children_of_an_interrupted_job_are_gone(bash: Computer) -> None:
    marker = str(31000 + secrets.randbelow(9000))
    # The background sleep of a non-interactive sh ignores SIGINT: only the
    # clean-up of the job's process group can stop it.
    code = f"sh -c 'sleep {marker}.1 & sleep {marker}.2; wait'"
    result = run(bash, code, "bash", timeout=1)
    assert result.status == "timeout"
    deadline = time.monotonic() + 10
    while _alive(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(f"sleep {marker}") == []


def test_a_job_that_ignores_sigint_is_killed_and_the_shell_keeps_its_state(
    bash: Computer,
) -> None:
    run(bash, "kept=1", "bash")
    result = run(bash, "sh -c 'trap \"\" INT; sleep 100'", "bash", timeout=1)
    assert result.status == "timeout"
    assert "foreground job was killed" in _notices(result)
    assert run(bash, "echo $kept", "bash").output == "1\n"


def test_a_shell_that_ignores_sigint_is_restarted_with_a_notice(bash: Computer) -> None:
    run(bash, "kept=1", "bash")
    result = run(bash, "trap '' INT\nwhile :; do :; done", "bash", timeout=1)
    assert result.status == "timeout"
    assert "restarted" in _notices(result) and "state was lost" in _notices(result)
    assert result.final.extras is not None and result.final.extras["state_lost"] is True
    assert run(bash, 'echo "[$kept]"', "bash").output == "[]\n"


def test_exit_restarts_the_shell_and_says_so(bash: Computer) -> None:
    run(bash, "kept=1", "bash")
    result = run(bash, "echo bye\nexit 3", "bash")
    assert result.output.startswith("bye\n")
    assert result.status == "restarted"
    assert result.final.extras is not None and result.final.extras["exit_code"] == 3
    assert "exited the shell" in _notices(result) and "restarted" in _notices(result)
    assert run(bash, 'echo "[$kept]"', "bash").output == "[]\n"


def test_a_killed_shell_is_detected_at_once_and_restarted(bash: Computer) -> None:
    started = time.monotonic()
    result = run(bash, "kill -9 $$\nsleep 100", "bash")
    assert time.monotonic() - started < 20  # detected, not waited out
    assert result.status == "kernel_died"
    assert "SIGKILL" in _notices(result)
    assert run(bash, "echo back", "bash").output == "back\n"


def test_a_death_between_runs_is_reported_by_the_next_run(bash: Computer) -> None:
    run(bash, "(sleep 0.3; kill -9 $$) >/dev/null 2>&1 &", "bash")
    time.sleep(1.5)
    result = run(bash, "echo fine", "bash")
    assert "Since the last run" in _notices(result)
    assert result.output.endswith("fine\n") and result.status == "ok"


def test_closing_the_stream_early_stops_the_code(bash: Computer) -> None:
    stream = bash.run("bash", "echo first\nsleep 100")
    first = next(m for m in stream if m.format == "output")
    assert first.content == "first\n"
    stream.close()
    assert run(bash, "echo next", "bash").output == "next\n"


def test_interrupt_with_nothing_running_is_harmless(bash: Computer) -> None:
    run(bash, "true", "bash")
    bash.interrupt()
    assert run(bash, "echo ok", "bash").output == "ok\n"


def test_restart_on_request_loses_state(bash: Computer) -> None:
    run(bash, "kept=1", "bash")
    bash.restart("bash")
    assert run(bash, 'echo "[$kept]"', "bash").output == "[]\n"
