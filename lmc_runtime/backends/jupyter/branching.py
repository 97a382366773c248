"""A Python kernel's session with checkpoints (:class:`~..checkpoints.Checkpointing`).

A checkpoint is taken between runs, in a hidden run of its own (out of the
kernel's history), by the kernel's ``__lmc_checkpoint__`` (see
:mod:`.frozen`). A rollback is a restart whose new kernel is started from the
checkpoint instead of from nothing; the checkpoint stays. A fork hands another
session an :class:`~..checkpoints.Origin` for its first kernel.

The kernel's working directory and environment are the checkpoint's: they are
part of the interpreter's state. Files are not: a Computer's folder is its
user's, and a rollback leaves it as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio

from ...errors import CheckpointFailed, CheckpointNotFound, CheckpointsUnsupported
from ...replies import Status
from ..base import ExecutionOptions, SessionSettings
from ..checkpoints import CheckpointInfo, StartFrom, private_bytes
from .backend import JupyterSession
from .frozen import Frozen, RevivedKernel
from .interpreter import JupyterInterpreter

__all__ = ["CheckpointingSession", "FrozenOrigin"]

#: How long the frozen copy may take to connect once the kernel forked it.
_CONNECT = 10.0


@dataclass
class _Checkpoint:
    info: CheckpointInfo
    frozen: Frozen


class FrozenOrigin:
    """A forked session's kernels, started from a checkpoint while it is kept."""

    def __init__(self, frozen: Frozen) -> None:
        self._frozen = frozen

    def start_from(self) -> StartFrom | None:
        return self._frozen.start if self._frozen.alive else None


class CheckpointingSession(JupyterSession):
    """A local kernel's session that keeps checkpoints; ``settings`` is set by its backend."""

    language = "python"

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._checkpoints: dict[str, _Checkpoint] = {}

    async def _usable(self) -> SessionSettings:
        settings = self.settings
        if settings is not None and self.supervisor.current is None:
            # Between kernels (a start that failed or was cancelled, a death being
            # handled): the next run would start one; so does this.
            await self.supervisor.ensure_ready()
        if settings is None or not isinstance(self.supervisor.current, JupyterInterpreter):
            raise CheckpointsUnsupported(
                f"checkpoints are not supported for {self.language} on a Jupyter gateway"
            )
        if not hasattr(os, "pidfd_open"):
            raise CheckpointsUnsupported("checkpoints need Linux (pidfds)")
        # A sandbox without bubblewrap keeps the kernel's process tree on the host:
        # the frozen copy and its revived kernels stay in the session's cgroup. With
        # bubblewrap, the kernel must be one that can hand its sandbox (its PID
        # namespace, where the frozen copy lives) over to the kernel that replaces
        # it: one the fork server forked into it, or one revived there.
        launcher = settings.launcher
        supervised = launcher is not None and getattr(launcher, "supervises", True)
        if supervised and not hasattr(self._kernel_process(), "hand_over"):
            raise CheckpointsUnsupported(
                f"checkpoints are not supported for {self.language} in a sandbox "
                "whose kernel was not forked into it (lmc serve --no-fork-server)"
            )
        return settings

    def _kernel_process(self) -> object:
        """The running kernel's process, as its provisioner keeps it (or None)."""
        interpreter = self.supervisor.current
        manager = getattr(interpreter, "_km", None)
        return getattr(getattr(manager, "provisioner", None), "process", None)

    async def checkpoint(self) -> CheckpointInfo:
        settings = await self._usable()
        cid = uuid.uuid4().hex[:12]
        path = settings.work_dir / f"checkpoint-{cid}.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            listener.bind(str(path))
            os.chmod(path, 0o666)  # the sandbox's user connects (its folder is the host's)
            listener.listen(1)
            listener.setblocking(False)
            reported = await self._fork_frozen(settings.inside(path))
            with anyio.move_on_after(_CONNECT):
                await anyio.wait_readable(listener)  # it connected before the run's end
            try:
                conn, _ = listener.accept()
            except OSError as exc:
                raise CheckpointFailed(f"the frozen copy did not connect: {exc}") from exc
        finally:
            listener.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
        conn.setblocking(True)
        pid = _peer_pid(conn)
        if _inner_pid(pid) != reported.get("pid"):
            conn.close()
            raise CheckpointFailed("the frozen copy that connected is not the kernel's")
        frozen = Frozen(pid, conn)
        left = str(reported.get("left") or "")
        info = CheckpointInfo(cid, self.language, time.time(), 0, True, pid, left)
        self._checkpoints[cid] = _Checkpoint(info, frozen)
        return info

    async def _fork_frozen(self, path: str) -> dict[str, object]:
        """Run the kernel's ``__lmc_checkpoint__`` hidden; what it printed, as a dict."""
        options = ExecutionOptions(
            reply_to="lmc-checkpoint", timeout=_CONNECT * 3, track_lines=False, hidden=True
        )
        said: list[str] = []
        async for message in self.execute(f"__lmc_checkpoint__({path!r})", options):
            if message.type == "console" and isinstance(message.content, str):
                said.append(message.content)
        for line in "".join(said).splitlines():
            with contextlib.suppress(ValueError):
                reported = json.loads(line)
                if isinstance(reported, dict) and isinstance(reported.get("pid"), int):
                    return reported
        tail = "".join(said).strip()[-500:] or "nothing"
        raise CheckpointFailed(f"the kernel did not take the checkpoint: {tail}")

    def _get(self, checkpoint_id: str) -> _Checkpoint:
        found = self._checkpoints.get(checkpoint_id)
        if found is None:
            raise CheckpointNotFound(f"no checkpoint {checkpoint_id!r}")
        if not found.frozen.alive:
            raise CheckpointNotFound(f"checkpoint {checkpoint_id!r} is gone (its process ended)")
        return found

    async def rollback(self, checkpoint_id: str) -> None:
        frozen = self._get(checkpoint_id).frozen  # unknown or gone: refused at once
        settings = await self._usable()
        supervisor = self.supervisor
        factory = supervisor.factory
        # In a sandbox, the new kernel takes it over from the one it replaces.
        hand_over = getattr(self._kernel_process(), "hand_over", None)
        end_sandbox: Callable[[], None] | None = hand_over() if hand_over else None

        async def start(argv: Sequence[str], **options: Any) -> RevivedKernel:
            nonlocal end_sandbox
            inside = [settings.inside(Path(a)) if a.startswith("/") else a for a in argv]
            kernel = await frozen.start(inside, **options)
            if end_sandbox is not None:
                kernel.adopt(end_sandbox)
                end_sandbox = None
            return kernel

        def revived() -> JupyterInterpreter:
            interpreter = factory()
            assert isinstance(interpreter, JupyterInterpreter)
            interpreter.start_with(start)
            return interpreter

        reason = f"rolled back to checkpoint {checkpoint_id}"
        try:
            await supervisor.restart(
                reason, Status.RESTARTED, factory=revived, overlap=_leave_files
            )
        finally:
            if end_sandbox is not None:  # no kernel took it: the sandbox ends
                with anyio.CancelScope(shield=True):  # a cancelled rollback too
                    await anyio.to_thread.run_sync(end_sandbox)

    def checkpoints(self) -> Sequence[CheckpointInfo]:
        return [self.checkpoint_info(cid) for cid in list(self._checkpoints)]

    def checkpoint_info(self, checkpoint_id: str) -> CheckpointInfo:
        found = self._checkpoints.get(checkpoint_id)
        if found is None:
            raise CheckpointNotFound(f"no checkpoint {checkpoint_id!r}")
        frozen = found.frozen
        return replace(found.info, bytes=private_bytes(frozen.pid), alive=frozen.alive)

    async def drop_checkpoint(self, checkpoint_id: str) -> None:
        found = self._checkpoints.pop(checkpoint_id, None)
        if found is None:
            raise CheckpointNotFound(f"no checkpoint {checkpoint_id!r}")
        found.frozen.close()

    def origin(self, checkpoint_id: str) -> FrozenOrigin:
        return FrozenOrigin(self._get(checkpoint_id).frozen)

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            for found in self._checkpoints.values():
                found.frozen.close()
            self._checkpoints.clear()


def _leave_files(old: object) -> None:
    """The kernel a rollback replaces ends while the new one starts, on the same files."""
    if isinstance(old, JupyterInterpreter):
        old.leave_files()


def _inner_pid(pid: int) -> int:
    """Process ``pid``'s pid in its own PID namespace (its last ``NSpid``)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return pid


def _peer_pid(conn: socket.socket) -> int:
    """The pid of the process at the other end of unix socket ``conn``."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[:4], "little", signed=True)
