"""A terminal as the stdin of a shell run with an input callback.

The shells show the prompt of their own ``read`` (bash's and dash's ``read -p``,
zsh's ``read 'name?prompt'``) only when its input is a terminal, so a run that
answers input reads a pseudo-terminal of its own instead of a FIFO: the prompt
then comes on the shell's stderr like any other output, and the core's feeder
(:func:`~..core.stdin.feed_stdin`) takes it as the read's prompt. A terminal
reads lines of up to 4095 bytes: a longer answer stops the run, saying so. The terminal
does not echo; the runtime echoes an answer itself unless the reader switched
echoing on or canonical mode off (a line editor then echoes what it reads).
"""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import termios
from pathlib import Path

from ..core.stdin import StdinChannel

__all__ = ["TerminalStdin"]

#: Kernel wait channels of a process blocked reading a terminal, or in select or poll.
_TTY_WAITS = ("wait_woken", "n_tty_read")
_SELECTING = ("do_select", "do_sys_poll", "core_sys_select")
#: The number of ``read`` in ``/proc/PID/syscall``, per machine.
_READ_SYSCALL = {"x86_64": 0, "aarch64": 63}
#: The longest line (its newline included) a terminal in canonical mode reads whole.
_LINE_LIMIT = 4096
#: What a terminal in canonical mode reads as end-of-input (VEOF, ^D).
_EOF = b"\x04"


class TerminalStdin(StdinChannel):
    """A pseudo-terminal whose slave, linked at ``path``, the code reads as its stdin."""

    def __init__(self, path: Path, master: int, slave: int) -> None:
        super().__init__(path, slave, owned=False)
        self._master = master
        self._slave = slave

    @classmethod
    def create(cls, path: Path) -> TerminalStdin:
        """A new terminal without echo, linked at ``path`` (what the shell opens)."""
        master, slave = os.openpty()
        try:
            attrs = termios.tcgetattr(slave)
            attrs[3] &= ~(termios.ECHO | termios.ECHONL)
            termios.tcsetattr(slave, termios.TCSANOW, attrs)
            os.set_blocking(master, False)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            path.symlink_to(os.ttyname(slave))
        except OSError:
            os.close(master)
            os.close(slave)
            raise
        return cls(path, master, slave)

    def waits(self, pid: int, wchan: str) -> bool:
        if any(name in wchan for name in _SELECTING):
            return True
        return any(name in wchan for name in _TTY_WAITS) and _reads_stdin(pid)

    def echoes(self) -> bool:
        try:
            lflag = termios.tcgetattr(self._master)[3]
        except (OSError, termios.error):
            return True
        return bool(lflag & termios.ICANON) and not lflag & termios.ECHO

    def check(self, line: str) -> None:
        if len(line.encode("utf-8")) >= _LINE_LIMIT:
            limit = _LINE_LIMIT - 1
            raise OSError(errno.EMSGSIZE, f"a terminal reads lines of at most {limit} bytes")

    def answer(self, line: str) -> None:
        """Type ``line`` and a newline (nothing once closed); :class:`OSError` if the
        terminal's input has no room for it."""
        if self.closed:
            return
        data = (line + "\n").encode("utf-8")
        if os.write(self._master, data) < len(data):
            raise BlockingIOError(errno.EAGAIN, "the terminal's input is full")

    def close(self) -> None:
        """A read going on gets end-of-input; later reads fail. Idempotent."""
        if self.closed:
            return
        with contextlib.suppress(OSError):
            os.write(self._master, _EOF)
        for fd in (self._master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fd = -1
        with contextlib.suppress(OSError):
            self.path.unlink()


def _reads_stdin(pid: int) -> bool:
    """Whether ``pid`` is in ``read`` of its fd 0 (True where that cannot be told: a
    machine whose syscall numbers are not known here, or ``/proc`` hiding it)."""
    number = _READ_SYSCALL.get(platform.machine())
    if number is None:
        return True
    try:
        with open(f"/proc/{pid}/syscall") as fh:
            fields = fh.read().split()
    except OSError:
        return True
    if len(fields) < 2 or not fields[0].isdigit():
        return True  # "running", or not in a system call that blocks
    return int(fields[0]) == number and int(fields[1], 16) == 0
