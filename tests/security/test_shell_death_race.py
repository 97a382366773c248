"""A shell killed from inside, then a run sent at once: the run's code runs, in a new
shell, every time (attacked through a real ``lmc serve``, root and unprivileged, with
the machine's cores kept busy so that the death is noticed late).

The race made certain, in-process: ``tests/integration/backends/test_shell_recovery.py``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.integration.service.server import Server, output

from .harness import Account, serve_as

#: The red team's run: every process of the sandbox's user, then the shell's parent.
KILL_ALL = "kill -9 -1; kill -9 $PPID; echo x"
ROUNDS = 8


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    with serve_as(account, "--pool-size", "0", "--max-sessions", "2") as running:
        yield running


@pytest.fixture
def busy_cores() -> Iterator[None]:
    """Two processes spinning for the test's length: the host is as loaded as it was
    when the red team saw the next run's code lost (3 times in 4)."""
    spin = [sys.executable, "-c", "while True: pass"]
    spinners = [subprocess.Popen(spin) for _ in range(2)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait(timeout=30)


@pytest.mark.usefixtures("busy_cores")
def test_a_run_right_after_the_shell_is_killed_from_inside_runs_its_code(server: Server) -> None:
    """Regression: after `kill -9 -1; kill -9 $PPID; echo x`, the next run was sent to
    the dying shell and ended with its death ("status 137 ... state was lost") without
    running. Now a run the shell never took goes to the new shell, after the news."""
    sid = server.create(languages=["shell"])
    try:
        for round_ in range(ROUNDS):
            server.execute(sid, KILL_ALL, language="shell")
            after = output(server.execute(sid, "echo alive3", language="shell"))
            # The dying shell may yet take the run and end under it: its code ran then too.
            assert "alive3\n" in after, (round_, after)
    finally:
        server.delete(sid)
