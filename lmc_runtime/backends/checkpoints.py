"""What a session that keeps checkpoints of its interpreter offers (:class:`Checkpointing`).

A checkpoint is a frozen copy of a live interpreter: its state (objects,
modules, functions and classes, generators, ``random``), kept without running.
A rollback makes the interpreter's state the checkpoint's again, and the
checkpoint stays for another; a fork starts another session's interpreter from
it (:class:`Origin`). A session whose interpreter cannot be copied does not
implement the protocol: the Computer says checkpoints are not supported for
its language.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .base import KernelProcess

__all__ = ["CheckpointInfo", "Checkpointing", "Origin", "StartFrom"]

#: Starts a kernel's command line from a checkpoint, as a
#: :class:`~.base.ForkingLauncher` forks one: ``(argv, env=, cwd=, stdout=, stderr=)``.
StartFrom = Callable[..., Awaitable[KernelProcess | None]]


@dataclass(frozen=True)
class CheckpointInfo:
    """A checkpoint: its ``id``, when it was taken (Unix seconds), the private
    memory its frozen process holds (``bytes``: what the interpreter changed
    since, copied on write), whether that process (``pid``) is still there, and
    what it could not carry (``left_behind``: threads, subprocesses, sockets;
    empty if none)."""

    id: str
    language: str
    created_at: float
    bytes: int
    alive: bool
    pid: int
    left_behind: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "language": self.language,
            "created_at": self.created_at,
            "bytes": self.bytes,
            "alive": self.alive,
            "pid": self.pid,
            "left_behind": self.left_behind,
        }


class Origin(Protocol):
    """Where a forked session's interpreter comes from: a checkpoint, while it
    is kept (a start that stalled is tried again from it); once it is gone, a
    kernel that replaces a dead one starts afresh."""

    def start_from(self) -> StartFrom | None:
        """The start of a kernel from the checkpoint; None once it is gone."""
        ...


@runtime_checkable
class Checkpointing(Protocol):
    """A session that keeps checkpoints of its interpreter."""

    async def checkpoint(self) -> CheckpointInfo:
        """Freeze a copy of the interpreter's state now (between runs)."""
        ...

    async def rollback(self, checkpoint_id: str) -> None:
        """Replace the interpreter by one started from the checkpoint; it stays.
        :class:`~lmc_runtime.errors.CheckpointNotFound` if it is unknown or gone."""
        ...

    def checkpoints(self) -> Sequence[CheckpointInfo]:
        """The checkpoints kept, oldest first."""
        ...

    def checkpoint_info(self, checkpoint_id: str) -> CheckpointInfo:
        """One checkpoint, as :meth:`checkpoints` lists it (reading only its own
        process's memory); :class:`~lmc_runtime.errors.CheckpointNotFound` if unknown."""
        ...

    async def drop_checkpoint(self, checkpoint_id: str) -> None:
        """End the checkpoint's frozen process and forget it."""
        ...

    def origin(self, checkpoint_id: str) -> Origin:
        """An :class:`Origin` for another session, from the checkpoint."""
        ...


def private_bytes(pid: int) -> int:
    """The private memory of process ``pid`` (``Private_*`` of its smaps_rollup), or 0."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            fields = _fields(rollup.read().splitlines())
    except OSError:
        return 0
    return sum(kb for name, kb in fields.items() if name.startswith("Private_")) * 1024


def _fields(lines: Sequence[str]) -> Mapping[str, int]:
    found: dict[str, int] = {}
    for line in lines:
        name, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            found[name.strip()] = int(parts[0])
    return found
