"""What an execution's guard notes while it runs (:class:`Probe`): the counters
at its start, and the signs of a limit in its messages (a failed allocation, a
file too large, no room left, a process that could not start)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..messages import Message
from .cpu_watch import Watched
from .strays import Snapshot

__all__ = ["Probe"]

_FILE_SIZE_SIGNS = ("File too large", "File size limit exceeded")
#: Signs, in the code's errors, of a write refused for want of room (blocks or
#: inodes) on the session's disk or in one of its memory folders (/tmp).
_NO_SPACE_SIGNS = ("No space left on device", "ENOSPC")

#: Signs, in the code's output, that starting a process or thread failed at
#: RLIMIT_NPROC (bash, Python threads, Node); Python's own ``BlockingIOError``
#: from ``fork`` is recognised by :func:`_fork_failed`.
_PROCESS_SIGNS = (
    "fork: retry",
    "fork: Resource temporarily unavailable",
    "can't start new thread",
    "Cannot fork",
    "spawn EAGAIN",
)


def _fork_failed(text: str, error: object) -> bool:
    """Whether ``text`` shows a process or thread that could not be started."""
    if any(sign in text for sign in _PROCESS_SIGNS):
        return True
    return (
        (error == "BlockingIOError" or "BlockingIOError" in text)
        and "Resource temporarily unavailable" in text
        and any(call in text for call in ("fork", "Popen", "spawn", "exec"))
    )


@dataclass
class Probe:
    """Counters taken when an execution starts, and what was seen while it ran."""

    cpu_start: float | None
    oom_start: int
    pids_start: int
    disk_full: bool = False
    memory_error: bool = False
    file_too_large: bool = False
    fork_failed: bool = False
    no_space: bool = False
    #: The execution as the CPU limit's watch sees it (None: not watched).
    watched: Watched | None = None
    #: The session's processes when the execution started (None: not known).
    procs: Snapshot | None = None
    seen: list[str] = field(default_factory=list)

    def observe(self, message: Message) -> None:
        """Note the signs of a limit in one of the execution's messages."""
        if message.type != "console" or message.format != "output":
            return
        extras = message.extras or {}
        if extras.get("error") == "MemoryError":
            self.memory_error = True
        text = str(message.content)
        if extras.get("error") or extras.get("stream") == "stderr":
            self.file_too_large |= any(sign in text for sign in _FILE_SIZE_SIGNS)
        # A shell's errors come on its terminal, with its output.
        self.no_space |= any(sign in text for sign in _NO_SPACE_SIGNS)
        if _fork_failed(text, extras.get("error")):
            self.fork_failed = True
