"""Which processes of an interrupted job did not get its interrupt.

A shell forks each job, and the child gives itself the terminal before it resets
the shell's signal handlers and runs the command (``exec``): a SIGINT sent to the new
foreground group in between runs the shell's handler in the child, which then
forgets it, and the command starts with SIGINT at its default action, as if no
interrupt had come (bash's ``make_child`` and ``execute_disk_command``). A child
of the shell in an interrupted job that is still alive with SIGINT at its default
action can only have missed it: it is sent again. One that catches or ignores
SIGINT got it, and gets no second one (that is the ladder's next rung); nor do the
processes the job itself starts (a clean-up its handler runs).
"""

from __future__ import annotations

import logging
import signal

from ...procs import group_members, linux_procfs

__all__ = ["missed_interrupt", "sigint_default"]

logger = logging.getLogger(__name__)

_SIGINT_BIT = 1 << (signal.SIGINT - 1)
_FIELDS = ("PPid", "SigIgn", "SigCgt")


def _status(pid: int) -> dict[str, int] | None:
    """``pid``'s parent and signal masks from ``/proc/PID/status``; None if gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            found = {
                name: int(value, 10 if name == "PPid" else 16)
                for name, _, value in (line.partition(":") for line in fh)
                if name in _FIELDS
            }
    except (OSError, ValueError):
        return None
    return found if len(found) == len(_FIELDS) else None


def sigint_default(pid: int, parent: int | None = None) -> bool:
    """Whether ``pid`` has SIGINT at its default action (neither caught nor
    ignored), and is a child of ``parent`` if given; False if that cannot be
    told (gone, no ``/proc``)."""
    found = _status(pid) if linux_procfs() else None
    if found is None or (parent is not None and found["PPid"] != parent):
        return False
    return not (found["SigIgn"] | found["SigCgt"]) & _SIGINT_BIT


def missed_interrupt(group: int, shell: int) -> list[int]:
    """The live processes of the interrupted ``group`` that cannot have got its
    SIGINT: children of ``shell`` with SIGINT at its default action (see the
    module's docstring)."""
    return [pid for pid in group_members(group) if sigint_default(pid, shell)]
