"""Which processes of an interrupted job missed the interrupt: SIGINT at its default."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from lmc_runtime.backends.shell.interrupts import missed_interrupt, sigint_default
from lmc_runtime.procs import linux_procfs

pytestmark = pytest.mark.skipif(not linux_procfs(), reason="reads /proc")

#: Each child sets its SIGINT disposition, then says so on a line of its own.
_DISPOSITIONS = {
    "default": "signal.SIG_DFL",
    "ignored": "signal.SIG_IGN",
    "caught": "lambda *_: None",
}


def _child(disposition: str, group: int = 0) -> subprocess.Popen[bytes]:
    code = (
        "import signal, sys, time\n"
        f"signal.signal(signal.SIGINT, {_DISPOSITIONS[disposition]})\n"
        "print('set', flush=True)\n"
        "sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        process_group=group,
    )
    assert child.stdout is not None and child.stdout.readline() == b"set\n"
    return child


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        child.kill()
        child.wait(30)


def test_only_sigint_at_its_default_is_default(children: list[subprocess.Popen[bytes]]) -> None:
    for disposition in _DISPOSITIONS:
        children.append(_child(disposition))
    assert [sigint_default(child.pid) for child in children] == [True, False, False]


def test_only_a_child_of_the_parent_named_counts(
    children: list[subprocess.Popen[bytes]],
) -> None:
    children.append(_child("default"))
    assert sigint_default(children[0].pid, os.getpid())
    assert not sigint_default(children[0].pid, os.getppid())


def test_a_process_that_is_gone_is_not_default() -> None:
    child = _child("default")
    child.kill()
    child.wait(30)
    assert not sigint_default(child.pid)


def test_of_a_group_only_the_processes_at_the_default_missed_it(
    children: list[subprocess.Popen[bytes]],
) -> None:
    leader = _child("caught")
    children.append(leader)
    for disposition in ("default", "ignored", "default"):
        children.append(_child(disposition, group=leader.pid))
    children.append(_child("default"))  # of another group: not its business
    assert os.getpgid(children[1].pid) == leader.pid
    missed = sorted([children[1].pid, children[3].pid])
    assert sorted(missed_interrupt(leader.pid, os.getpid())) == missed
    assert missed_interrupt(leader.pid, os.getppid()) == []  # not the shell's children
    os.killpg(leader.pid, signal.SIGINT)  # those at the default end; the others stay
    for child in (children[1], children[3]):
        assert child.wait(30) == -signal.SIGINT
    assert missed_interrupt(leader.pid, os.getpid()) == []
