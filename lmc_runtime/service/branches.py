"""A session's checkpoints in the service: its Python interpreter's state and a
copy of its working directory, kept together, restored together.

The interpreter's part is the library's (:mod:`lmc_runtime.branching`): a frozen
copy-on-write fork of the kernel, in the session's cgroup (its private memory
counts against the memory limit). The files' part is a copy of the working
directory taken through :mod:`~lmc_runtime.sandbox.fileops` (no link followed)
into a host-only folder of the session's disk, so it counts against the disk
limit. Checkpoints live as long as the session, in this server's memory: a
restart of the server loses them with the session.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..errors import CheckpointNotFound
from ..sandbox.fileops._copy import copy_tree, empty_tree
from .errors import (
    CheckpointGone,
    CheckpointMemory,
    CheckpointUnknown,
    SessionEnded,
    TooManyCheckpoints,
)

if TYPE_CHECKING:
    from ..computer import Computer
    from .session import ServiceSession

__all__ = ["SessionCheckpoint", "drop", "listed", "rollback", "take"]

logger = logging.getLogger(__name__)


@dataclass
class SessionCheckpoint:
    """One checkpoint of a session: the interpreter's (``id``) and its files' copy."""

    id: str
    created_at: float
    files: Path
    file_bytes: int

    def as_dict(self, memory: int, alive: bool) -> dict[str, object]:
        return {
            "id": self.id,
            "created_at": self.created_at,
            "bytes": memory + self.file_bytes,
            "memory_bytes": memory,
            "file_bytes": self.file_bytes,
            "alive": alive,
        }


def _computer(session: ServiceSession) -> Computer:
    computer = session.computer
    if computer is None:
        raise SessionEnded(session.id)
    return computer


def _folder(session: ServiceSession) -> Path:
    """Where the session's checkpoints keep their files: on its disk, host-only."""
    return session.sandbox.root / "disk" / "checkpoints"


async def take(session: ServiceSession, limit: int) -> dict[str, object]:
    """A new checkpoint of ``session`` (not running code: :class:`SessionBusy`)."""
    claim = session.acquire()
    try:
        if len(session.checkpoints) >= limit:
            raise TooManyCheckpoints(limit)
        _check_memory(session)
        computer = _computer(session)
        cid = await computer.acheckpoint("python")
        try:
            files = _folder(session) / cid
            room = await session.sandbox.disk_room()
            copied = await anyio.to_thread.run_sync(
                _copy_out, session.sandbox.work_dir, files, room
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await computer.adrop_checkpoint(cid)
                await anyio.to_thread.run_sync(_remove, _folder(session) / cid)
            raise
        kept = SessionCheckpoint(cid, time.time(), files, copied)
        session.checkpoints[cid] = kept
        return kept.as_dict(*_memory(computer, cid))
    finally:
        claim.release()


def _check_memory(session: ServiceSession) -> None:
    """:class:`CheckpointMemory` past half of the session's memory limit: its
    kernel may write every page again, which the frozen copy then keeps."""
    limit = session.policy.limits.memory_bytes
    used = (session.usage() or {}).get("memory_bytes")
    if limit is not None and isinstance(used, int) and used * 2 > limit:
        raise CheckpointMemory(used, limit)


def listed(session: ServiceSession) -> list[dict[str, object]]:
    """The session's checkpoints, oldest first, with what each holds now."""
    computer = session.computer
    return [
        kept.as_dict(*(_memory(computer, kept.id) if computer else (0, False)))
        for kept in session.checkpoints.values()
    ]


async def rollback(session: ServiceSession, checkpoint_id: str) -> dict[str, object]:
    """Make the interpreter's state and the working directory the checkpoint's."""
    claim = session.acquire()
    try:
        kept = _known(session, checkpoint_id)
        computer = _computer(session)
        try:  # one whose process ended is refused, before any change
            await computer.arollback(checkpoint_id)
        except CheckpointNotFound as exc:
            raise CheckpointGone(checkpoint_id) from exc
        work_dir, owner = session.sandbox.work_dir, session.sandbox.owner

        def restore() -> None:
            empty_tree(work_dir)
            copy_tree(kept.files, work_dir, budget=None, owner=owner)

        await anyio.to_thread.run_sync(restore)
        return kept.as_dict(*_memory(computer, checkpoint_id))
    finally:
        claim.release()


async def drop(session: ServiceSession, checkpoint_id: str) -> None:
    """End the checkpoint's frozen process and remove its files."""
    kept = _known(session, checkpoint_id)
    session.checkpoints.pop(checkpoint_id, None)
    computer = session.computer
    if computer is not None:
        with contextlib.suppress(CheckpointNotFound):
            await computer.adrop_checkpoint(checkpoint_id)
    await anyio.to_thread.run_sync(_remove, kept.files)


def _known(session: ServiceSession, checkpoint_id: str) -> SessionCheckpoint:
    kept = session.checkpoints.get(checkpoint_id)
    if kept is None:
        raise CheckpointUnknown(checkpoint_id)
    return kept


def _memory(computer: Computer, checkpoint_id: str) -> tuple[int, bool]:
    """The private memory of the checkpoint's frozen process, and whether it lives
    (only its own process is read: a session may keep many)."""
    try:
        info = computer.checkpoint_info(checkpoint_id)
    except CheckpointNotFound:
        return 0, False
    return info.bytes, info.alive


def _copy_out(work_dir: Path, files: Path, room: int | None) -> int:
    """Copy ``work_dir`` into the new host-only folder ``files``; its size."""
    files.mkdir(parents=True, mode=0o700)
    try:
        return copy_tree(work_dir, files, budget=room).bytes
    except BaseException:
        _remove(files)
        raise


def _remove(files: Path) -> None:
    shutil.rmtree(files, ignore_errors=True)
