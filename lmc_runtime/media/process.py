"""Run a helper process to completion, bounded in time and in what is read back."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

from ..lifeline import Lifeline

__all__ = ["Completed", "run_bounded"]


@dataclass(frozen=True)
class Completed:
    """What a bounded run gave: its exit code (None when it timed out), stdout, stderr."""

    code: int | None
    stdout: bytes
    stderr: bytes
    overflowed: bool = False


async def _read(stream: ByteReceiveStream | None, limit: int, into: list[bytes]) -> bool:
    """Read ``stream`` to its end, keeping at most ``limit`` bytes; True if more came."""
    if stream is None:
        return False
    size = 0
    overflowed = False
    async for chunk in stream:
        if size + len(chunk) > limit:
            overflowed = True
            chunk = chunk[: max(0, limit - size)]
        size += len(chunk)
        if chunk:
            into.append(chunk)
    return overflowed


async def _feed(process: Process, data: bytes) -> None:
    if process.stdin is None:
        return
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.send(data)
    await process.stdin.aclose()


async def run_bounded(
    argv: Sequence[str],
    stdin: bytes,
    *,
    timeout: float,
    stdout_limit: int,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    lifeline: Lifeline | None = None,
) -> Completed:
    """Run ``argv`` with ``stdin`` (in ``cwd``, with ``env``: by default this process's,
    held by ``lifeline`` if given); kill its whole process group after ``timeout`` seconds."""
    out: list[bytes] = []
    err: list[bytes] = []
    overflow = [False]
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    if lifeline is not None:
        lifeline.hold(process.pid)
    code: int | None = None
    try:
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_feed, process, stdin)
                tg.start_soon(_read, process.stderr, 4096, err)
                overflow[0] = await _read(process.stdout, stdout_limit, out)
            code = await process.wait()
    finally:
        if lifeline is not None:
            lifeline.release(process.pid)  # ended, or ended here, before it is reaped
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()
    return Completed(code, b"".join(out), b"".join(err), overflow[0])
