"""Which processes of an interrupted job did not get its interrupt.

A shell forks each job, and the child gives itself the terminal before it resets
the shell's signal handlers and ``exec``\\ s the command: a SIGINT sent to the new
foreground group in between runs the shell's handler in the child, which then
forgets it, and the command starts with SIGINT at its default action, as if no
interrupt had come (bash's ``make_child`` and ``execute_disk_command``). A process
of an interrupted job that is still alive with SIGINT at its default action can
only have missed it: it is sent again. One that catches or ignores SIGINT got it,
and gets no second one (that is the ladder's next rung).
"""

from __future__ import annotations

import logging
import signal

from ...procs import group_members, linux_procfs

__all__ = ["missed_interrupt", "sigint_default"]

logger = logging.getLogger(__name__)

_SIGINT_BIT = 1 << (signal.SIGINT - 1)


def sigint_default(pid: int) -> bool:
    """Whether ``pid`` has SIGINT at its default action (neither caught nor
    ignored); False if that cannot be told (gone, no ``/proc``)."""
    if not linux_procfs():
        return False
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            masks = {
                name: int(value, 16)
                for name, _, value in (line.partition(":") for line in fh)
                if name in ("SigIgn", "SigCgt")
            }
    except (OSError, ValueError):
        return False
    if len(masks) != 2:
        return False
    return not (masks["SigIgn"] | masks["SigCgt"]) & _SIGINT_BIT


def missed_interrupt(group: int) -> list[int]:
    """The live processes of the interrupted ``group`` that cannot have got its
    SIGINT: they have it at its default action (see the module's docstring)."""
    return [pid for pid in group_members(group) if sigint_default(pid)]
