"""`lmc repl` in a real terminal (tmux): typing, switching languages, plots, Ctrl-C, Ctrl-D."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from .terminal import EXIT_MARK, Terminal, alive

pytestmark = pytest.mark.integration


def test_python_then_a_switch_to_shell_and_back(terminal: Terminal) -> None:
    terminal.start()
    terminal.line("greeting = 'hello from python'")
    terminal.line("for word in greeting.split():")
    terminal.line("print(word.upper())")
    terminal.keys("Enter")  # the blank line ends the block
    terminal.wait_for(r"HELLO\nFROM\nPYTHON")
    terminal.line("%shell")
    terminal.wait_for("switched to shell")
    terminal.line("echo hi")
    terminal.wait_for(r"shell> echo hi\nhi\n")
    terminal.line("cd /tmp && pwd")
    terminal.wait_for(r"\n/tmp\n")
    terminal.line("%python")
    terminal.line("print(greeting)")  # the Python session was kept meanwhile
    terminal.wait_for(r"python> print\(greeting\)\nhello from python\n")


def test_a_plot_is_saved_to_a_file_whose_path_is_printed(terminal: Terminal) -> None:
    terminal.start()
    terminal.line("import matplotlib.pyplot as plt")
    terminal.line("plt.plot([1, 3, 2]); plt.title('lmc'); plt.show()")
    match = terminal.wait_for(r"\[image\] (\S+\.png)")
    path = Path(match.group(1))
    assert path.is_file() and path.parent == terminal.state / "images"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ctrl_c_interrupts_a_long_loop_and_the_state_survives(terminal: Terminal) -> None:
    terminal.start()
    terminal.line("kept = 'still here'; n = 0")
    terminal.line("while True:")
    terminal.line("n += 1")
    terminal.keys("Enter")
    terminal.wait_for(r"line \d · Ctrl-C interrupts")  # the live panel follows the loop
    terminal.keys("C-c")
    terminal.wait_for(r"\[lmc\] Execution was interrupted at line \d; the kernel's state was kept")
    terminal.line("print(kept, n > 0)")
    terminal.wait_for(r"\nstill here True\n")
    # Ctrl-C at the prompt clears the line and never exits.
    terminal.type("this is not python")
    terminal.keys("C-c")
    terminal.line("print('after', 'clearing')")
    screen = terminal.wait_for(r"\nafter clearing\n").string
    assert "NameError" not in screen and "SyntaxError" not in screen
    assert EXIT_MARK not in screen


def test_errors_are_red(terminal: Terminal) -> None:
    terminal.start()
    terminal.line("1 / 0")
    screen = terminal.wait_for(r"ZeroDivisionError: division by zero", escapes=True).string
    # tmux writes a colour where it changes: the last one before the message is in force.
    before = screen[: screen.index("ZeroDivisionError: division by zero")]
    last_colour = re.findall(r"\x1b\[([0-9;]*)m", before)[-1]
    assert "31" in last_colour.split(";"), repr(before[-300:])


def test_ctrl_d_exits_and_leaves_no_processes(terminal: Terminal) -> None:
    terminal.start()
    terminal.line("import os; os.getpid()")
    python_pid = int(terminal.wait_for(r"\n(\d+)\n").group(1))
    terminal.line("%shell")
    terminal.line("echo shell=$$")
    shell_pid = int(terminal.wait_for(r"\nshell=(\d+)\n").group(1))
    terminal.line("%js")
    terminal.line("console.log('node=' + process.pid)")
    node_pid = int(terminal.wait_for(r"\nnode=(\d+)\n").group(1))
    pids = [python_pid, shell_pid, node_pid]
    assert all(alive(pid) for pid in pids)
    assert terminal.tagged_processes()
    terminal.keys("C-d")
    terminal.wait_for(re.escape(EXIT_MARK) + r" 0\]")
    assert [pid for pid in pids if alive(pid)] == []
    assert terminal.tagged_processes() == []


def test_input_is_asked_at_the_terminal_and_ctrl_c_there_stops_the_code(terminal: Terminal) -> None:
    terminal.start()
    terminal.line("name = input('who? ')")
    terminal.wait_for(r"(?m)^who\?\s*$")
    terminal.line("Ada")
    terminal.line("print('hi', name)")
    terminal.wait_for(r"\nhi Ada\n")
    terminal.line("other = input('again? ')")
    terminal.wait_for(r"(?m)^again\?\s*$")
    terminal.keys("C-c")
    terminal.wait_for(r"\[lmc\] .*(interrupted|could not be answered)")
    terminal.line("print('name is still', name)")
    terminal.wait_for(r"\nname is still Ada\n")


def test_hanging_up_the_terminal_shuts_every_interpreter_down(terminal: Terminal) -> None:
    terminal.start()
    terminal.line("import os; os.getpid()")
    python_pid = int(terminal.wait_for(r"\n(\d+)\n").group(1))
    assert alive(python_pid)
    terminal.tmux("kill-server")  # SIGHUP to the REPL, as when a terminal window closes
    deadline = time.monotonic() + 30
    while terminal.tagged_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert terminal.tagged_processes() == [] and not alive(python_pid)
