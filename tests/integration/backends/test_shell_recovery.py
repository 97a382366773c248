"""bash: what only a shell does when code is stopped: jobs, their children, exit codes.

What every language does on timeouts, interrupts, deaths and restarts is in
``tests/contract``.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts

from ..conftest import Result, run


@pytest.fixture
def bash(tmp_path: Path) -> Iterator[Computer]:
    with Computer(cwd=tmp_path, timeouts=Timeouts(interrupt_grace=1.0)) as c:
        yield c


def _alive(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, timeout=30)
    return found.stdout.split()


def _notices(result: Result) -> str:
    return "".join(
        m.content
        for m in result.messages
        if m.format == "output" and str(m.content).startswith("[lmc]")
    )


def test_an_interrupted_job_keeps_the_cwd_and_runs_nothing_after_it(
    bash: Computer, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    assert run(bash, "cd sub", "bash").status == "ok"
    result = run(bash, "echo start\nsleep 100\necho never", "bash", timeout=1)
    assert result.status == "timeout"
    assert "never" not in result.output
    assert run(bash, "pwd", "bash").output == f"{tmp_path / 'sub'}\n"


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
    assert result.final.extras is not None and result.final.extras["state_lost"] is False
    assert "foreground job was killed" in _notices(result)
    assert run(bash, "echo $kept", "bash").output == "1\n"


def test_exit_reports_its_code_and_says_the_shell_exited(bash: Computer) -> None:
    result = run(bash, "echo bye\nexit 3", "bash")
    assert result.status == "restarted"
    assert result.final.extras is not None and result.final.extras["exit_code"] == 3
    assert "exited the shell" in _notices(result)


def _wait_gone(pid: int, bound: float = 10.0) -> None:
    deadline = time.monotonic() + bound
    while Path(f"/proc/{pid}").exists():
        assert time.monotonic() < deadline, f"pid {pid} still alive after {bound} s"
        time.sleep(0.01)


def test_regression_a_run_sent_to_a_shell_dead_but_not_yet_noticed_runs_its_code(
    bash: Computer,
) -> None:
    """Regression: a shell killed from inside just after its run ended (``kill -9 -1;
    kill -9 $PPID`` in a sandbox) took the next run's typed line while dead; when its
    death was noticed the next run ended with it, and its code never ran. A process
    outside the shell's session holds the terminal here, so the death is noticed only
    after the drain grace: the window is seconds wide, not a matter of luck."""
    first = run(
        bash,
        "setsid sleep 4 2>/dev/null & echo $!\n(sleep 0.3; kill -9 $$) >/dev/null 2>&1 &\necho $$",
        "bash",
    )
    assert first.status == "ok", first.output
    # The lines that are a number alone: a job notice ("[1] 1234") may come too.
    holder, shell = (int(n) for n in re.findall(r"^\d+$", first.output, re.MULTILINE))
    try:
        _wait_gone(shell)
        after = run(bash, "echo alive3", "bash", timeout=30)
        assert after.output.endswith("alive3\n"), after.output
        assert "Its state was lost" in after.output  # the death is still told
        assert after.status == "ok"
    finally:
        subprocess.run(["kill", "-9", str(holder)], capture_output=True, check=False)


def test_regression_a_run_sent_again_reads_its_input_from_the_new_shell(tmp_path: Path) -> None:
    """Regression: a run sent again to a new shell (its first died before taking it)
    kept the dead shell as its own: its input callback was never asked (the feeder
    watched the dead shell's session for reads) and its interrupts went nowhere."""
    asked: list[str] = []

    def answer(prompt: str) -> str:
        asked.append(prompt)
        return "alice"

    with Computer(cwd=tmp_path, on_input=answer, timeouts=Timeouts(interrupt_grace=1.0)) as c:
        first = run(
            c,
            "setsid sleep 4 2>/dev/null & echo $!\n(sleep 1; kill -9 $$) >/dev/null 2>&1 &\n"
            "echo $$",
            "bash",
        )
        # The lines that are a number alone: a job notice ("[1] 1234") may come too.
        holder, shell = (int(n) for n in re.findall(r"^\d+$", first.output, re.MULTILINE))
        try:
            _wait_gone(shell)
            after = run(c, "read x\necho got $x", "bash", timeout=20)
            assert after.output.endswith("got alice\n"), after.output
            assert asked and after.status == "ok"
        finally:
            subprocess.run(["kill", "-9", str(holder)], capture_output=True, check=False)
