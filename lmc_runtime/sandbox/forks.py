"""Python kernels forked into their sandboxes by a fork server (``_zygote.py``).

A Python kernel spends most of its start importing ipykernel and IPython. The
fork server imports them once; each kernel is then forked from it, already
imported, into a sandbox made for it. The sandbox is made as for any process
of the session (``wrap``: its cgroup, rlimits, user, and a bwrap of its own),
but runs a *holder*, a shell that says ``ready`` and sleeps. bwrap's
``--info-fd`` names the sandbox's init process, of which the runtime takes a
pidfd (checked against the namespaces bwrap reported) once the holder has
said ``ready``: bwrap writes that report as soon as it has made the
namespaces, before it has mapped the sandbox's user, mounted its root or made
its nested user namespace; the holder runs only once all that is done, so a
kernel never enters a half-made sandbox. The fork server's broker enters the
namespaces of that pidfd, so the kernel lives
in exactly the sandbox a kernel started the usual way would: same namespaces,
same user, no capabilities, ``no_new_privs``, the same cgroup and rlimits.

:class:`ForkedKernel` stands for the kernel where the provisioner keeps a
``Popen``: its pid, ``poll``, ``wait`` and ``send_signal``. Ending it ends its
holder, and with it the sandbox's PID namespace and everything left in it.

Only a server running as root forks kernels (the broker joins cgroups and
namespaces on the host); elsewhere, or if the fork server fails, kernels start
the usual way.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from ..backends.core.procs import signal_group
from ..errors import ForkFailed

__all__ = ["HOLDER", "ForkServer", "ForkedKernel", "forkable", "start_holder"]

logger = logging.getLogger(__name__)

ZYGOTE = Path(__file__).with_name("_zygote.py")
#: The holder: what the sandbox runs while a forked kernel lives in it (it
#: says ``ready`` once it runs: the sandbox is complete then).
HOLDER = ("sh", "-c", "echo ready && exec sleep infinity")
#: The most bwrap's ``--info-fd`` report may take.
_INFO_BYTES = 1 << 16
#: Variables of the server's environment the fork server keeps (its locale).
_ZYGOTE_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "PATH")
#: How long a holder or a broker may take to answer, in seconds.
_ANSWER = 30.0


def forkable(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is ``python SCRIPT.py ...`` with this interpreter, which
    the fork server can run."""
    return (
        len(argv) >= 2
        and os.path.realpath(argv[0]) == os.path.realpath(sys.executable)
        and argv[1].endswith(".py")
        and not argv[1].startswith("-")
    )


async def _receive(conn: socket.socket, what: str) -> tuple[dict[str, Any], list[int]]:
    """One JSON message and its descriptors from ``conn``, within :data:`_ANSWER`."""
    try:
        with anyio.fail_after(_ANSWER):
            await anyio.wait_readable(conn)
        data, fds, _, _ = socket.recv_fds(conn, 4096, 2)
    except (OSError, TimeoutError) as exc:
        raise ForkFailed(f"{what} did not answer: {exc}") from exc
    try:
        message = json.loads(data) if data and data != b"ready" else {}
    except ValueError as exc:
        message = {"error": f"a bad answer: {exc}"}
    if not isinstance(message, dict) or "error" in message or (not data and not fds):
        for fd in fds:
            os.close(fd)
        reason = message.get("error") if isinstance(message, dict) else None
        raise ForkFailed(f"{what} failed: {reason or 'it ended'}")
    return message, fds


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


async def start_holder(
    command: Callable[[int], list[str]], env: Mapping[str, str], cwd: str, stderr: int
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``command(info_fd)`` (a holder in its sandbox, run by bwrap with
    ``--info-fd info_fd``): the process and a pidfd of the sandbox's init."""
    report, info_fd = os.pipe()
    ready, said = os.pipe()
    try:
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
    finally:
        os.close(info_fd)
        os.close(said)
    try:
        info = await _bwrap_info(report)
        with anyio.fail_after(_ANSWER):
            await anyio.wait_readable(ready)
        if os.read(ready, 16) != b"ready\n":
            raise ForkFailed("the sandbox's holder did not start")
        return process, _pidfd_of(info)
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(ForkedKernel.end_holder, process)
        if isinstance(exc, (OSError, TimeoutError)):
            raise ForkFailed(f"the sandbox could not be entered: {exc}") from exc
        raise
    finally:
        os.close(report)
        os.close(ready)


class ForkedKernel:
    """A forked kernel, as the provisioner uses a ``Popen``."""

    def __init__(
        self,
        pid: int,
        pidfd: int,
        broker: socket.socket,
        holder: subprocess.Popen[bytes],
    ) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._broker = broker
        self._holder: subprocess.Popen[bytes] | None = holder

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def ended(self) -> None:
        """Wait in the event loop until the broker reports how the kernel ended."""
        if self.returncode is None:
            await anyio.wait_readable(self._broker)
            self._read_status(wait=False)

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read_status(wait=False)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Block until the kernel has ended; its exit code, as ``Popen.wait`` gives it."""
        while self.returncode is None:
            self._read_status(wait=True, timeout=timeout)
        return self.returncode

    def _read_status(self, *, wait: bool, timeout: float | None = None) -> None:
        ready, _, _ = select.select([self._broker], [], [], timeout if wait else 0)
        if not ready:
            if wait and timeout is not None:
                raise subprocess.TimeoutExpired(["forked kernel"], timeout)
            return
        try:
            data = self._broker.recv(4096)
            status = int(json.loads(data)["status"]) if data else None
        except (OSError, ValueError, KeyError, TypeError):
            status = None
        if status is None:  # the broker is gone without a word: the kernel goes too
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            self.returncode = -signal.SIGKILL
        else:
            self.returncode = os.waitstatus_to_exitcode(status)
        self._release()

    @staticmethod
    def end_holder(holder: subprocess.Popen[bytes]) -> None:
        """End a holder, its sandbox and whatever is left in it."""
        signal_group(holder.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            holder.wait(timeout=_ANSWER)

    def _release(self) -> None:
        """The kernel has ended: end its sandbox and close the descriptors."""
        if self._holder is not None:
            self.end_holder(self._holder)
            self._holder = None
        self._broker.close()
        with contextlib.suppress(OSError):
            os.close(self._pidfd)
        self._pidfd = -1


class ForkServer:
    """The fork server of one runtime process: started on first use, ended by
    :meth:`aclose` (or when this process ends: its socket closes)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._lock = anyio.Lock()
        self._broken: str | None = None

    @staticmethod
    def supported() -> bool:
        """Whether this process may fork kernels into sandboxes (it runs as root)."""
        return sys.platform == "linux" and os.geteuid() == 0 and hasattr(os, "pidfd_open")

    async def _ensure(self) -> socket.socket:
        if self._broken is not None:
            raise ForkFailed(self._broken)
        if self._control is not None and self._process is not None:
            if self._process.poll() is None:
                return self._control
            logger.warning(
                "the fork server ended (%s); starting it again", self._process.returncode
            )
            self._control.close()
            self._control = self._process = None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {name: os.environ[name] for name in _ZYGOTE_ENV if name in os.environ}
        try:
            process = subprocess.Popen(
                [sys.executable, str(ZYGOTE), str(theirs.fileno())],
                env=env,
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=[theirs.fileno()],
                start_new_session=True,
            )
        except OSError as exc:
            ours.close()
            self._broken = f"the fork server could not be started: {exc}"
            raise ForkFailed(self._broken) from exc
        finally:
            theirs.close()
        try:
            line = await self._first_line(process)
        except BaseException:  # cancelled while it started: it goes
            ours.close()
            with anyio.CancelScope(shield=True):
                await self._end(process)
            raise
        if line != b"ready\n":
            ours.close()
            await self._end(process)
            self._broken = f"the fork server did not start: {line.decode(errors='replace')}"
            raise ForkFailed(self._broken)
        self._process, self._control = process, ours
        return ours

    @staticmethod
    async def _first_line(process: subprocess.Popen[bytes]) -> bytes:
        """``ready``, or what the fork server said on stderr before it ended."""
        assert process.stdout is not None and process.stderr is not None
        with anyio.move_on_after(60) as waited:
            await anyio.wait_readable(process.stdout.fileno())
        if waited.cancelled_caught:
            return b"it was not ready within 60 s"
        line = process.stdout.readline()
        process.stdout.close()
        if line != b"ready\n":
            process.kill()  # so that its stderr ends
            line = process.stderr.read()[-2000:].strip() or b"it ended at once"
        process.stderr.close()  # it writes nothing more there (brokers answer on sockets)
        return line

    @staticmethod
    async def _end(process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            process.kill()
        await anyio.to_thread.run_sync(process.wait)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()

    async def prepare(self) -> None:
        """Start the fork server now, so the first kernel does not wait for it."""
        try:
            async with self._lock:
                await self._ensure()
        except ForkFailed as exc:
            logger.warning("Python kernels will start the usual way: %s", exc)

    async def spawn(
        self, request: Mapping[str, Any], holder: int, stdout: int, stderr: int
    ) -> tuple[int, int, socket.socket]:
        """Fork a kernel into the sandbox of pidfd ``holder``: its pid, a pidfd of
        it and the broker's socket (which reports how it ended)."""
        payload = json.dumps(dict(request)).encode()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            async with self._lock:
                control = await self._ensure()
                try:
                    socket.send_fds(control, [b"k"], [theirs.fileno()])
                except OSError as exc:
                    raise ForkFailed(f"the fork server is gone: {exc}") from exc
            theirs.close()
            socket.send_fds(ours, [payload], [holder, stdout, stderr])
            message, fds = await _receive(ours, "the fork server")
            if len(fds) != 1 or not isinstance(message.get("pid"), int):
                raise ForkFailed("the fork server sent no kernel")
        except BaseException:
            theirs.close()
            ours.close()
            raise
        return int(message["pid"]), fds[0], ours

    async def aclose(self) -> None:
        """End the fork server (the kernels it forked are not its: they stay)."""
        control, process = self._control, self._process
        self._control = self._process = None
        if control is not None:
            control.close()
        if process is not None:
            with anyio.move_on_after(5):
                await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
            await self._end(process)
