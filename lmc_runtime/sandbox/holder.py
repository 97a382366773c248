"""A holder: the process a forked kernel's sandbox runs while the kernel lives.

The sandbox is made as for any process of the session (``wrap``: its cgroup,
rlimits, user, and a bwrap of its own), but runs :data:`HOLDER`, a shell that
says ``ready`` and sleeps. bwrap's ``--info-fd`` names the sandbox's init
process, of which the runtime takes a pidfd, checked against the namespaces
bwrap reported, once the holder has said ``ready``: bwrap writes that report
as soon as it has made the namespaces, before it has mapped the sandbox's
user, mounted its root or made its nested user namespace; the holder runs
only once all that is done, so a kernel never enters a half-made sandbox.
Ending the holder's process group ends the sandbox, and with its PID
namespace everything left in it.

The process the runtime starts is bwrap itself when the launcher lets no
wrapper stay above it (from the main thread, see :mod:`.launch`), else the
exec wrapper that supervises bwrap: either way it leads a process group and a
session of its own, and the sandbox's init is its child.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import anyio

from ..errors import ForkFailed
from ..procs import signal_group

__all__ = ["HOLDER", "Holder", "Start", "end_holder", "start_holder"]

#: The holder: what the sandbox runs while a forked kernel lives in it (it
#: says ``ready`` once it runs: the sandbox is complete then).
HOLDER = ("sh", "-c", "echo ready && exec sleep infinity")
#: Where a holder the fork server starts finds bwrap's ``--info-fd``.
_INFO_AT = 3


class Holder(Protocol):
    """A holder's process, as its owner uses it: a ``Popen``, or a process the
    fork server started (:class:`~.forked.ForkedProcess`)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


#: Starts a command line with the given environment, folder and descriptors
#: (its number -> the descriptor here), as the fork server does.
Start = Callable[[list[str], Mapping[str, str], str, dict[int, int]], Awaitable[Holder]]

#: How long the sandbox may take to say it runs, in seconds.
_ANSWER = 30.0
#: How long the chain above a killed init may take to end before its whole
#: process group is killed (a frozen cgroup holds it, for one).
_CHAIN_ENDS = 2.0
#: The most bwrap's ``--info-fd`` report may take.
_INFO_BYTES = 1 << 16


async def _bwrap_info(fd: int) -> dict[str, Any]:
    """The JSON object bwrap writes on its ``--info-fd`` (its pipe's read end ``fd``)."""
    data = b""
    with anyio.fail_after(_ANSWER):
        while len(data) < _INFO_BYTES:
            await anyio.wait_readable(fd)
            piece = os.read(fd, _INFO_BYTES)
            if not piece:
                break
            data += piece
            with contextlib.suppress(ValueError):
                info = json.loads(data)
                if isinstance(info, dict):
                    return info
    raise ForkFailed(f"the sandbox did not say where it runs: {data[:200]!r}")


def _pidfd_of(info: dict[str, Any]) -> int:
    """A pidfd of the sandbox's init process that ``info`` names, checked to be in
    the namespaces ``info`` reports (so not another process that took its pid)."""
    pid = info.get("child-pid")
    if not isinstance(pid, int) or pid <= 1:
        raise ForkFailed(f"the sandbox named no process: {info!r}")
    pidfd = os.pidfd_open(pid)
    try:
        for key, inode in info.items():
            kind = key.removesuffix("-namespace")
            if kind != key and os.stat(f"/proc/{pid}/ns/{kind}").st_ino != inode:
                raise ForkFailed(f"process {pid} is not in the sandbox's {kind} namespace")
        signal.pidfd_send_signal(pidfd, 0)  # still the same process, after the checks
    except BaseException:
        os.close(pidfd)
        raise
    return pidfd


async def _line(fd: int, limit: int = 16) -> bytes:
    """What ``fd`` says up to its first newline (or its end, or ``limit`` bytes),
    however many writes and reads that takes (an unbuffered writer sends the
    newline apart), within :data:`_ANSWER` seconds."""
    said = b""
    with anyio.fail_after(_ANSWER):
        while b"\n" not in said and len(said) < limit:
            await anyio.wait_readable(fd)
            chunk = os.read(fd, limit - len(said))
            if not chunk:
                break
            said += chunk
    return said


async def start_holder(
    command: Callable[[int], list[str]],
    env: Mapping[str, str],
    cwd: str,
    stderr: int,
    start: Start | None = None,
) -> tuple[Holder, int]:
    """Start ``command(info_fd)`` (a holder in its sandbox, run by bwrap with
    ``--info-fd info_fd``), as a child of this process or through ``start`` (the
    fork server's): the process and a pidfd of the sandbox's init."""
    report, info_fd = os.pipe()
    ready, said = os.pipe()
    process: Holder
    try:
        if start is not None:
            process = await _started(start, command, env, cwd, (said, stderr, info_fd))
        else:
            process = subprocess.Popen(
                command(info_fd),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=said,
                stderr=stderr,
                pass_fds=[info_fd],
                start_new_session=True,
            )
    except OSError as exc:
        os.close(report)
        os.close(ready)
        raise ForkFailed(f"the sandbox could not be started: {exc}") from exc
    except BaseException:
        os.close(report)
        os.close(ready)
        raise
    finally:
        os.close(info_fd)
        os.close(said)
    try:
        info = await _bwrap_info(report)
        said_ready = await _line(ready)
        if said_ready != b"ready\n":
            ended = process.poll()
            how = "it runs" if ended is None else f"it ended with {ended}"
            raise ForkFailed(f"the sandbox's holder did not start: it said {said_ready!r}; {how}")
        return process, _pidfd_of(info)
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(end_holder, process)
        if isinstance(exc, (OSError, TimeoutError)):
            raise ForkFailed(f"the sandbox could not be entered: {exc}") from exc
        raise
    finally:
        os.close(report)
        os.close(ready)


async def _started(
    start: Start,
    command: Callable[[int], list[str]],
    env: Mapping[str, str],
    cwd: str,
    fds: tuple[int, int, int],
) -> Holder:
    """``command`` started through ``start``, its stdin ``/dev/null``, its stdout,
    stderr and info descriptor ``fds``."""
    said, stderr, info_fd = fds
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        wanted = {0: null, 1: said, 2: stderr, _INFO_AT: info_fd}
        return await start(command(_INFO_AT), env, cwd, wanted)
    finally:
        os.close(null)


def end_holder(holder: Holder, init: int | None = None) -> None:
    """End a holder, its sandbox and whatever is left in it.

    With ``init`` (a pidfd of the sandbox's init), that process is killed: the
    kernel then ends every process of its PID namespace, and each process of the
    chain above it reaps the one below (bwrap its init, the supervising wrapper, if
    any, bwrap, this process the one it started). Regression: killing the
    holder's process group at once
    left bwrap and its init to be reaped by PID 1, which a container may never
    do, as zombies still counted in the session's cgroup."""
    if init is not None:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(init, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            holder.wait(timeout=_CHAIN_ENDS)
            return
    signal_group(holder.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        holder.wait(timeout=_ANSWER)
