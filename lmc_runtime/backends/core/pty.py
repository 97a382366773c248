"""Starting an interpreter on a PTY with pexpect, set up before it first looks at its terminal."""

from __future__ import annotations

import os
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pexpect
import ptyprocess

__all__ = ["spawn_pty"]

#: Rows and columns of the terminal: wide, so programs do not wrap their output.
_WINDOW = (50, 200)


class _Spawn(pexpect.spawn):  # type: ignore[misc]
    """pexpect's spawn, keeping one extra descriptor open in the child."""

    def __init__(self, keep_fd: int, *args: Any, **kwargs: Any) -> None:
        self.keep_fd = keep_fd
        super().__init__(*args, **kwargs)

    def _spawnpty(self, args: list[str], **kwargs: Any) -> Any:
        return ptyprocess.PtyProcess.spawn(args, pass_fds=(self.keep_fd,), **kwargs)


def _in_child(keep_fd: int) -> None:
    """Runs in the new shell's process before exec, on its terminal.

    A shell saves the terminal's modes at start and restores them after a
    job dies of a signal, so they are set here, before it ever looks.
    """
    os.set_inheritable(keep_fd, True)
    attrs = termios.tcgetattr(0)
    attrs[1] &= ~termios.ONLCR  # "\n" stays "\n"; a "\r" is the program's own
    attrs[3] &= ~(termios.ECHO | termios.ECHONL)
    termios.tcsetattr(0, termios.TCSANOW, attrs)


def spawn_pty(argv: Sequence[str], cwd: Path, env: Mapping[str, str], keep_fd: int) -> Any:
    """Start ``argv`` on a new PTY (echo off, ``\\n`` untranslated), keeping ``keep_fd``.

    Blocking (fork and exec): call it from a worker thread.
    """
    child = _Spawn(
        keep_fd,
        argv[0],
        list(argv[1:]),
        cwd=str(cwd),
        env=dict(env),
        echo=False,
        dimensions=_WINDOW,
        preexec_fn=lambda: _in_child(keep_fd),
    )
    # pexpect sleeps after close and terminate by default; nothing here needs it.
    child.delayafterclose = child.delayafterterminate = 0
    child.ptyproc.delayafterclose = child.ptyproc.delayafterterminate = 0
    return child
