"""The REPL under abuse in a real terminal: Ctrl-C pressed again and again while
code runs, and a large paste. It keeps the session and never shows a traceback."""

from __future__ import annotations

import pytest

from .terminal import EXIT_MARK, Terminal

pytestmark = pytest.mark.integration


def test_ctrl_c_spam_during_a_run_keeps_the_session_and_shows_no_traceback(
    terminal: Terminal,
) -> None:
    terminal.start("--plain")
    # The kernel is up and the state set before the spam: an interrupt while a
    # language is still starting stops that run before anything runs.
    terminal.line("import time; kept = 41; print('ready')")
    terminal.wait_for(r"\nready\n")
    terminal.line("print('looping'); time.sleep(600)")
    terminal.wait_for(r"\nlooping\n")
    for _ in range(12):
        terminal.keys("C-c")
    terminal.wait_for(r"\[lmc\] .*interrupted")
    for _ in range(3):  # at the prompt Ctrl-C only clears the line
        terminal.keys("C-c")
    terminal.line("print('alive', kept + 1)")
    screen = terminal.wait_for(r"\nalive 42\n").string
    # The code's own KeyboardInterrupt is shown; nothing of the REPL's is.
    assert "lmc_runtime" not in screen and 'File "' not in screen
    assert screen.count("Interrupting") == 1  # pressing again says nothing new
    assert EXIT_MARK not in screen


def test_a_large_paste_runs_as_one_input(terminal: Terminal) -> None:
    terminal.start("--plain")
    body = "\n".join(f"    total += {n}" for n in range(300))
    code = f"def add():\n    total = 0\n{body}\n    return total\n\nprint('sum', add())\n"
    terminal.tmux("set-buffer", "-b", "paste", code)
    terminal.tmux("paste-buffer", "-p", "-b", "paste", "-t", "repl")
    terminal.keys("Enter")
    screen = terminal.wait_for(r"\nsum 44850\n").string
    assert "Error" not in screen and EXIT_MARK not in screen
