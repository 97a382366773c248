"""Checkpoints' processes: what a kernel's death does to them, how they end, the
note of what they left behind, ``checkpoints="every_run"``, and the languages
that have none."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.errors import CheckpointNotFound, CheckpointsUnsupported, UsageError

from ...waiters import process_ended
from ..conftest import run

#: Bounds every wait on a process's end.
_GUARD = 30.0
OWNER = """
import sys
from lmc_runtime import Computer

computer = Computer()
list(computer.run("python", "x = 7"))
first = computer.checkpoint()
computer.rollback(first)
kept = computer.checkpoint()
out = "".join(m.content for m in computer.run("python", "import os; print(os.getpid())")
              if m.format == "output")
pids = [c.pid for c in computer.checkpoints()]
print("PIDS", out.strip(), *pids, flush=True)
sys.stdin.read()
"""

#: A revived kernel whose checkpoint is dropped: nothing but the kernel itself
#: watches its owner then (the frozen copy that started it is gone).
ORPHAN = """
import sys
from lmc_runtime import Computer

computer = Computer()
list(computer.run("python", "x = 7"))
first = computer.checkpoint()
computer.rollback(first)
frozen = [c.pid for c in computer.checkpoints()]
computer.drop_checkpoint(first)
out = "".join(m.content for m in computer.run("python", "import os; print(os.getpid(), x)")
              if m.format == "output")
print("PIDS", out.split()[0], *frozen, flush=True)
sys.stdin.read()
"""


def _kernel_pid(computer: Computer) -> int:
    return int(run(computer, "import os; print(os.getpid())").output)


def test_a_kernel_killed_while_checkpoints_exist_rolls_back_from_them(
    computer: Computer,
) -> None:
    run(computer, "kept = 'before'")
    taken = computer.checkpoint()
    killed = run(computer, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.status != "ok"
    assert "NameError" in run(computer, "kept").output  # a fresh kernel
    computer.rollback(taken)
    assert run(computer, "print(kept)").output == "before\n"


def test_a_checkpoint_whose_process_died_is_reported_gone(computer: Computer) -> None:
    run(computer, "x = 1")
    taken = computer.checkpoint()
    (info,) = computer.checkpoints()
    os.kill(info.pid, signal.SIGKILL)
    assert process_ended(info.pid, _GUARD)
    assert [c.alive for c in computer.checkpoints()] == [False]
    assert computer.checkpoint_info(taken).alive is False
    with pytest.raises(CheckpointNotFound, match="gone"):
        computer.rollback(taken)
    assert run(computer, "print(x)").output == "1\n"  # the kernel is untouched
    with pytest.raises(CheckpointNotFound):
        computer.rollback("no-such-checkpoint")
    with pytest.raises(CheckpointNotFound):
        computer.checkpoint_info("no-such-checkpoint")


def test_drop_and_close_end_every_checkpoint_process(tmp_path: Path) -> None:
    with Computer(cwd=tmp_path, timeouts=Timeouts(interrupt_grace=2.0)) as computer:
        run(computer, "x = 1")
        first, second = computer.checkpoint(), computer.checkpoint()
        pids = {c.id: c.pid for c in computer.checkpoints()}
        assert all(c.bytes > 0 for c in computer.checkpoints())
        computer.drop_checkpoint(first)
        assert process_ended(pids[first], _GUARD)
        assert [c.id for c in computer.checkpoints()] == [second]
        with pytest.raises(CheckpointNotFound):
            computer.drop_checkpoint(first)
        computer.rollback(second)
        revived = _kernel_pid(computer)
    assert process_ended(pids[second], _GUARD)
    assert process_ended(revived, _GUARD)


@pytest.mark.parametrize("script", [OWNER, ORPHAN], ids=["checkpoints-kept", "checkpoint-dropped"])
def test_nothing_outlives_an_owner_killed_with_sigkill(tmp_path: Path, script: str) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()  # the owner's own bound: its runs' timeouts
        assert line.startswith("PIDS "), line
        pids = [int(pid) for pid in line.split()[1:]]
        assert len(pids) == (3 if script is OWNER else 2)  # the revived kernel, the checkpoints
        owner.kill()
        owner.wait(_GUARD)
        for pid in pids:
            assert process_ended(pid, _GUARD), f"process {pid} outlived its owner"
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.communicate(timeout=_GUARD)


@pytest.mark.parametrize("drop", [False, True], ids=["checkpoint-kept", "checkpoint-dropped"])
def test_a_revived_kernel_that_ends_is_reaped_and_how_it_ended_said(
    computer: Computer, drop: bool
) -> None:
    """Its frozen copy reaps it and says its wait status: an exit code, a signal. A
    kernel whose checkpoint was dropped is another's to reap (init's); its end is
    still seen."""
    run(computer, "kept = 1")
    taken = computer.checkpoint()
    for code, said in (
        ("os._exit(3)", "exited with code 3"),
        ("os.kill(os.getpid(), 9)", "SIGKILL"),
    ):
        computer.rollback(taken)
        if drop:
            computer.drop_checkpoint(taken)
        pid = _kernel_pid(computer)
        ended = run(computer, f"import os; {code}")
        assert ended.status == "kernel_died", ended.output
        assert "restarted" in ended.output
        if drop:
            break  # os._exit(3)'s status is nobody's to say: the kernel is gone all the same
        assert said in ended.output, ended.output
        assert not os.path.exists(f"/proc/{pid}"), f"kernel {pid} was left a zombie"
    assert run(computer, "print('kept' in globals())").output.endswith("False\n")


def test_an_unmodified_checkpoint_costs_under_10_mib_of_its_own(computer: Computer) -> None:
    """The issue's bound on a checkpoint's own memory: what the frozen copy writes
    after its fork (the code the revived kernels run is compiled before it, shared)."""
    run(computer, "state = bytearray(8 * 2**20)\nextra = {i: str(i) for i in range(1000)}")
    computer.checkpoint()
    computer.checkpoint()
    sizes = [c.bytes for c in computer.checkpoints()]
    assert all(0 < size < 10 * 2**20 for size in sizes), sizes


def test_the_first_run_after_a_rollback_says_what_was_left_behind(computer: Computer) -> None:
    started = run(
        computer,
        "import subprocess, threading, time\n"
        "t = threading.Thread(target=time.sleep, args=(60,), name='waiter', daemon=True)\n"
        "t.start()\n"
        "p = subprocess.Popen(['sleep', '60'])",
    )
    assert started.status == "ok"
    taken = computer.checkpoint()
    (info,) = computer.checkpoints()
    assert info.left_behind == "1 thread ('waiter') and 1 subprocess were not carried"
    computer.rollback(taken)
    first = run(computer, "print(t.is_alive(), p.poll())")
    assert "1 thread ('waiter') and 1 subprocess were not carried" in first.output
    assert "False" in first.output
    assert "not carried" not in run(computer, "print(1)").output
    run(computer, "p.kill()")


def test_every_run_takes_a_checkpoint_its_final_message_names(tmp_path: Path) -> None:
    with Computer(cwd=tmp_path, checkpoints="every_run", keep=2) as computer:
        ids = []
        for step in (1, 2, 3):
            result = run(computer, f"step = {step}")
            ids.append(str((result.final.extras or {}).get("checkpoint") or ""))
        assert all(ids) and len(set(ids)) == 3
        assert [c.id for c in computer.checkpoints()] == ids[1:]
        computer.rollback(ids[2])  # undo the last step
        assert run(computer, "print(step)").output.endswith("2\n")
        shell = run(computer, "echo hi", language="shell")
        assert "checkpoint" not in (shell.final.extras or {})


def test_languages_without_checkpoints_say_so(computer: Computer) -> None:
    if not computer.languages["shell"].available:
        pytest.skip("no shell here")
    with pytest.raises(CheckpointsUnsupported, match="not supported for shell"):
        computer.checkpoint("shell")
    with pytest.raises(CheckpointsUnsupported, match="not supported for shell"):
        computer.fork("shell")
    with pytest.raises(UsageError, match="unknown language"):
        computer.checkpoint("cobol")


def test_a_forks_kernel_that_dies_is_replaced_by_a_fresh_one(computer: Computer) -> None:
    run(computer, "kept = 1")
    fork = computer.fork()
    try:
        assert run(fork, "print(kept)").output == "1\n"
        run(fork, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
        after = run(fork, "print('kept' in globals())")
        assert after.status == "ok" and after.output.endswith("False\n")
    finally:
        fork.close()
    assert run(computer, "print(kept)").output == "1\n"
