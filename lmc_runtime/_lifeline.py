"""The watcher that ends a Computer's interpreters when the process that owns them ends.

Run as ``python -I -S _lifeline.py``, in a session of its own, with its stdin the
read end of a pipe whose write end only the owner holds. It imports nothing from
the package (it starts in a few milliseconds) and reads one line per change:
``+PID`` when the owner has started an interpreter (its own process group and
session, as every interpreter is started), ``-PID`` before the owner reaps one.

End of file on the pipe means the owner is gone, however it went: it closed
the pipe, it returned, it was killed by any signal (the kernel closes a dead
process's descriptors). Every interpreter still held is then killed with
SIGKILL, with its process group and, on Linux, every process of its session
that left the group; then the watcher exits. The lines are read in order, so
a ``-PID`` written before the owner reaped PID is seen before the end: a pid
the system gave to another process since is never signalled.
"""

from __future__ import annotations

import os
import sys

# ruff: noqa: SIM105
# Neither ``contextlib`` (hence try/except/pass) nor ``signal``, which builds its
# enums with ``enum``: ``_signal`` is the same functions and numbers (see
# sandbox/_exec.py). Type checkers read this block; Python never runs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
else:
    import _signal as signal

__all__ = ["end_held", "main"]

_PROC = "/proc"


def _session_members(sid: int) -> list[int]:
    """Every live process of session ``sid``, from ``/proc`` (empty without one)."""
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return []
    members = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"{_PROC}/{entry}/stat", "rb") as stat:
                raw = stat.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold anything: split after it.
        fields = raw[raw.rfind(b")") + 2 :].split()
        try:
            if int(fields[3]) == sid and fields[0] != b"Z":
                members.append(int(entry))
        except (IndexError, ValueError):
            continue
    return members


def end_held(held: set[int]) -> None:
    """SIGKILL every held interpreter's process group, then what is left of its session."""
    for pid in held:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    for pid in held:
        for member in _session_members(pid):
            try:
                os.kill(member, signal.SIGKILL)
            except OSError:
                pass


def _apply(line: bytes, held: set[int]) -> None:
    try:
        pid = int(line[1:])
    except ValueError:
        return
    if pid <= 1:
        return
    if line[:1] == b"+":
        held.add(pid)
    elif line[:1] == b"-":
        held.discard(pid)


def main() -> None:
    # Signals meant for the owner's terminal or group are not for this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    held: set[int] = set()
    pending = b""
    while True:
        try:
            data = os.read(0, 1 << 16)
        except InterruptedError:
            continue
        except OSError:
            break
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            _apply(line, held)
    end_held(held)


if __name__ == "__main__":
    main()
    sys.exit(0)
