"""Python code that exits, kills or confuses its own kernel."""

from __future__ import annotations

import os
import signal
import time

import pytest

from lmc_runtime import Computer, Timeouts

from ...contract.harness import process_gone, wait_for
from ..conftest import run
from .conftest import assert_well_formed


@pytest.mark.parametrize(
    ("code", "ename"),
    [
        ("import sys\nsys.exit(3)", "SystemExit"),
        ("raise SystemExit", "SystemExit"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt"),
        ("def f(): return f()\nf()", "RecursionError"),
    ],
)
def test_exits_and_self_raised_interrupts_are_errors_and_keep_state(
    c: Computer, code: str, ename: str
) -> None:
    run(c, "kept_state = 'yes'")
    result = run(c, code)
    assert_well_formed(result)
    assert result.status == "error"
    assert any((m.extras or {}).get("error") == ename for m in result.messages)
    assert run(c, "print(kept_state)").output == "yes\n"


def test_quit_restarts_and_says_so(c: Computer) -> None:
    run(c, "gone = 1")
    result = run(c, "quit()")
    assert_well_formed(result)
    assert result.status == "restarted" and result.final.extras["state_lost"] is True  # type: ignore[index]
    assert run(c, "print('gone' in dir())").output == "False\n"


def test_do_shutdown_from_user_code_is_reported_and_recovered(c: Computer) -> None:
    run(c, "marker = 1\nget_ipython().kernel.do_shutdown(False)")
    deadline = time.monotonic() + 8
    outputs = []
    while time.monotonic() < deadline:  # the kernel's loop stops 0.1 s later, then it exits
        result = run(c, "print('marker' in dir())")
        assert_well_formed(result)
        outputs.append(result.output)
        if result.output != "True\n":
            break
        time.sleep(0.2)
    assert "the kernel exited with code 0" in outputs[-1], outputs[-3:]
    back = run(c, "print('back')")
    # Output the fresh kernel flushed after its first run ended may come here,
    # marked late and tagged with that run; nothing else may.
    own = [m for m in back.of("console", "output") if not (m.extras or {}).get("late")]
    assert "".join(str(m.content) for m in own) == "back\n"


def _kernel_pid(comp: Computer) -> int:
    return int(run(comp, "import os\nmarker = 1\nprint(os.getpid())").output)


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: process_gone(pid), f"the end of kernel {pid}")


def test_a_kernel_death_while_the_caller_handles_the_last_message_is_reported() -> None:
    """A kernel killed while the caller still holds the final message of a run (its
    stream not yet closed) is reported by the next run: the state is never lost
    without a word."""
    with Computer(timeouts=Timeouts(execution=10)) as comp:
        pid = _kernel_pid(comp)
        for m in comp.run("python", "print('hi')"):
            if m.is_final:
                _kill(pid)
        result = run(comp, "print('marker' in dir())")
        assert "killed by SIGKILL" in result.output, "state was lost without a word"
        if result.status == "kernel_died":  # the run found the kernel dead before the watcher
            result = run(comp, "print('marker' in dir())")
    assert result.output.endswith("False\n")


def test_a_kernel_death_after_a_refused_message_is_still_reported() -> None:
    """A message refused before it reaches the kernel (code with a lone surrogate)
    leaves nothing behind: a later death while idle is still reported."""
    with Computer(timeouts=Timeouts(execution=10)) as comp:
        run(comp, "print('\ud800')")
        _kill(_kernel_pid(comp))
        result = run(comp, "print('marker' in dir())")
        assert "killed by SIGKILL" in result.output, "state was lost without a word"
        if result.status == "kernel_died":  # the run found the kernel dead before the watcher
            result = run(comp, "print('marker' in dir())")
    assert result.output.endswith("False\n")


def test_fork_in_user_code_does_not_confuse_the_session(c: Computer) -> None:
    code = (
        "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\n"
        "os.waitpid(pid, 0)\nprint('parent')"
    )
    result = run(c, code)
    assert_well_formed(result)
    assert result.output == "parent\n"
    # A forked child that stays alive inside the kernel does not break later runs.
    result = run(
        c, "import os\nif os.fork() == 0:\n    import time; time.sleep(3); os._exit(0)\nprint('p')"
    )
    assert_well_formed(result)
    assert result.output == "p\n"
    assert run(c, "print('after fork')").output == "after fork\n"


def test_monkeypatched_print_behaves_as_in_jupyter(c: Computer) -> None:
    run(
        c,
        "import builtins\n_orig_print = builtins.print\nbuiltins.print = lambda *a, **k: _orig_print('X', *a, **k)",
    )
    try:
        assert run(c, "print(1)").output == "X 1\n"
    finally:
        run(c, "builtins.print = _orig_print")
    assert run(c, "print(1)").output == "1\n"


def test_code_that_closes_sys_stdout_gets_clear_errors_as_in_jupyter() -> None:
    with Computer(timeouts=Timeouts(execution=10)) as comp:
        closed = run(comp, "import sys\nsys.stdout.close()")
        later = run(comp, "print('x')")
        stderr = run(comp, "import sys\nprint('still', file=sys.stderr)")
    for result in (closed, later, stderr):
        assert_well_formed(result)
    assert later.status == "error" and "I/O operation on closed file" in later.output
    assert stderr.output == "still\n"
