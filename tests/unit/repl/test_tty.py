"""While code runs, keys typed ahead are not echoed, and Ctrl-C stays a signal."""

from __future__ import annotations

import os
import termios
from collections.abc import Iterator

import pytest

from lmc_runtime.repl.tty import quiet_typeahead


@pytest.fixture
def pty_fd() -> Iterator[int]:
    parent, child = os.openpty()
    try:
        yield child
    finally:
        os.close(parent)
        os.close(child)


def test_echo_and_line_mode_are_off_inside_and_restored_after(pty_fd: int) -> None:
    before = termios.tcgetattr(pty_fd)
    assert before[3] & termios.ECHO
    with quiet_typeahead(pty_fd):
        inside = termios.tcgetattr(pty_fd)[3]
        assert not inside & termios.ECHO and not inside & termios.ICANON
        assert inside & termios.ISIG  # Ctrl-C still interrupts
    assert termios.tcgetattr(pty_fd) == before


def test_restored_even_when_the_block_fails(pty_fd: int) -> None:
    before = termios.tcgetattr(pty_fd)
    with pytest.raises(RuntimeError), quiet_typeahead(pty_fd):
        raise RuntimeError("boom")
    assert termios.tcgetattr(pty_fd) == before


def test_not_a_terminal_is_left_alone() -> None:
    read, write = os.pipe()
    try:
        with quiet_typeahead(read), quiet_typeahead(None):
            pass
    finally:
        os.close(read)
        os.close(write)
