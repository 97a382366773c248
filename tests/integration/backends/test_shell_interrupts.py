"""Interrupting a shell's job: one that missed the interrupt, one that ignores it.

Each shell runs ``state=running; JOB; state=finished`` and is interrupted once
``JOB`` printed ``started``: the run must stop there and keep ``state=running``.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts

from ..conftest import Result, run, run_interrupting

SHELLS = [
    "bash",
    "sh",
    pytest.param("zsh", marks=pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh")),
]

#: A job that misses the first SIGINT, as the shell's own child does when the
#: interrupt comes after it took the terminal and before its ``exec`` (the shell's
#: handler runs in the child, and the command starts with SIGINT at its default):
#: its handler puts the default back, and the second SIGINT ends it.
_MISSES_ONE = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, lambda *_: signal.signal(signal.SIGINT, signal.SIG_DFL))\n"
    "print('started', flush=True)\n"
    "time.sleep(300)\n"
)


def _cell(job: str) -> str:
    return f"state=running; {job}; state=finished"


def _started(message: object) -> bool:
    return "started" in str(getattr(message, "content", ""))


def _notices(result: Result) -> str:
    return "".join(
        str(m.content)
        for m in result.messages
        if m.format == "output" and str(m.content).startswith("[lmc]")
    )


@pytest.fixture
def patient(tmp_path: Path) -> Iterator[Computer]:
    """A grace long enough that only a missed interrupt sent again stops the job
    before the ladder's next rung (a SIGKILL) would."""
    with Computer(cwd=tmp_path, timeouts=Timeouts(interrupt_grace=10.0)) as c:
        yield c


@pytest.mark.parametrize("shell", SHELLS)
def test_regression_a_job_that_missed_the_interrupt_gets_it_again(
    patient: Computer, shell: str
) -> None:
    """Regression: a job that missed its interrupt ran on until the grace was over,
    was then killed (SIGKILL), and the shell, not interrupted by a kill, ran the
    rest of the cell (``state=finished``); over the service a client that left
    mid-run found the code finished (test_clients.py, in CI under load)."""
    job = f"{shlex.quote(sys.executable)} -c {shlex.quote(_MISSES_ONE)}"
    result = run_interrupting(patient, _cell(job), shell, _started)
    assert result.status == "interrupted", result.output
    assert "killed" not in _notices(result), result.output
    assert run(patient, "echo $state", shell).output == "running\n"


#: A job whose handler runs a clean-up of a second (a process of its own group).
_CLEANS_UP = (
    "import signal, subprocess, sys, time\n"
    "def stop(*_):\n"
    "    subprocess.run(['sh', '-c', 'sleep 1 && echo cleaned'])\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGINT, stop)\n"
    "print('started', flush=True)\n"
    "time.sleep(300)\n"
)


@pytest.mark.parametrize("shell", SHELLS)
def test_the_clean_up_of_a_job_that_handles_the_interrupt_is_not_interrupted(
    patient: Computer, shell: str
) -> None:
    """What a job starts once it got the interrupt (its processes, in its group,
    with SIGINT at its default) did not miss an interrupt: only the shell's own
    children are sent it again."""
    job = f"{shlex.quote(sys.executable)} -c {shlex.quote(_CLEANS_UP)}"
    result = run_interrupting(patient, job, shell, _started)
    assert result.status == "interrupted", result.output
    assert "cleaned" in result.output and "killed" not in _notices(result), result.output


@pytest.mark.parametrize("shell", SHELLS)
def test_regression_a_job_killed_for_ignoring_the_interrupt_is_the_last_command_run(
    tmp_path: Path, shell: str
) -> None:
    """Regression: the job that ignored the interrupt was killed, and the shell ran
    the rest of the cell: a kill is no interrupt to it. The shell is interrupted
    too now, and goes back to its prompt once the job is gone."""
    with Computer(cwd=tmp_path, timeouts=Timeouts(interrupt_grace=1.0)) as computer:
        job = "sh -c 'trap \"\" INT; echo started; sleep 100'"
        result = run_interrupting(computer, _cell(job), shell, _started)
        assert result.status == "interrupted", result.output
        assert "foreground job was killed" in _notices(result), result.output
        assert run(computer, "echo $state", shell).output == "running\n"
