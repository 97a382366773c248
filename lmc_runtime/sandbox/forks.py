"""Python kernels forked into their sandboxes by a fork server (``_zygote.py``).

A Python kernel spends most of its start importing ipykernel and IPython. The
fork server imports them once; each kernel is then forked from it, already
imported, into a sandbox made for it and held by a holder (see
:mod:`.holder`): born in the holder's PID namespace, it enters the holder's
other namespaces, so the kernel lives in exactly the sandbox a kernel started
the usual way would:
same namespaces, same user, no capabilities, ``no_new_privs``, the same cgroup
and rlimits.

:class:`~.forked.ForkedKernel` stands for the kernel where the provisioner keeps a
``Popen``: its pid, ``poll``, ``wait`` and ``send_signal``. Ending it ends its
holder, and with it the sandbox's PID namespace and everything left in it.

Only a server running as root forks kernels (a forked kernel joins cgroups and
namespaces on the host); elsewhere, or if the fork server fails, kernels start
the usual way.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from ..errors import ForkFailed
from .forked import ForkedKernel

__all__ = ["ForkServer", "ForkedKernel", "default_cache", "forkable"]

logger = logging.getLogger(__name__)

ZYGOTE = Path(__file__).with_name("_zygote.py")
#: Variables of the server's environment the fork server keeps (its locale).
_ZYGOTE_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "PATH")
#: How long a holder or a broker may take to answer, in seconds.
_ANSWER = 30.0


def default_cache() -> Path | None:
    """``$XDG_CACHE_HOME/lmc-runtime/fork-server``, or ``~/.cache/...`` (None
    without a home)."""
    try:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except (RuntimeError, KeyError):
        return None
    return Path(base) / "lmc-runtime" / "fork-server"


def _venv_of(python: str) -> str | None:
    """The virtualenv whose interpreter ``python`` is (by the ``pyvenv.cfg`` that
    Python itself looks for beside it or one folder up), or None."""
    folder = os.path.dirname(os.path.abspath(python))
    for candidate in (folder, os.path.dirname(folder)):
        if os.path.isfile(os.path.join(candidate, "pyvenv.cfg")):
            return candidate
    return None


def forkable(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is ``python SCRIPT.py ...`` with this interpreter, which
    the fork server can run: the same binary and the same virtualenv (a venv's
    ``python`` is a link to the same binary, with other packages)."""
    return (
        len(argv) >= 2
        and os.path.realpath(argv[0]) == os.path.realpath(sys.executable)
        and _venv_of(argv[0]) == _venv_of(sys.executable)
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
        message = json.loads(data) if data else {}
    except ValueError as exc:
        message = {"error": f"a bad answer: {exc}"}
    if not isinstance(message, dict) or "error" in message or (not data and not fds):
        for fd in fds:
            os.close(fd)
        reason = message.get("error") if isinstance(message, dict) else None
        raise ForkFailed(f"{what} failed: {reason or 'it ended'}")
    return message, fds


class ForkServer:
    """The fork server of one runtime process: started on first use, ended by
    :meth:`aclose` (or when this process ends: its socket closes)."""

    def __init__(self, cache: Path | None = None) -> None:
        #: Where the fork server keeps what its probe found, for the next one
        #: (``_hotcache.py``): a folder of the host's that no sandbox sees.
        self.cache = cache
        self._process: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        #: The pid of the fork server's starter (``_kernels.fork_starter``).
        self._starter: int | None = None
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
        cached = [] if self.cache is None else [str(self.cache)]
        try:
            process = subprocess.Popen(
                [sys.executable, str(ZYGOTE), str(theirs.fileno()), *cached],
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
        said = line.split()
        if len(said) != 2 or said[0] != b"ready" or not said[1].isdigit():
            ours.close()
            await self._end(process)
            self._broken = f"the fork server did not start: {line.decode(errors='replace')}"
            raise ForkFailed(self._broken)
        self._process, self._control, self._starter = process, ours, int(said[1])
        return ours

    @staticmethod
    async def _first_line(process: subprocess.Popen[bytes]) -> bytes:
        """``ready`` and its starter's pid, or what the fork server said on stderr
        before it ended."""
        assert process.stdout is not None and process.stderr is not None
        with anyio.move_on_after(60) as waited:
            await anyio.wait_readable(process.stdout.fileno())
        if waited.cancelled_caught:
            return b"it was not ready within 60 s"
        line = process.stdout.readline()
        process.stdout.close()
        if not line.startswith(b"ready "):
            process.kill()  # so that its stderr ends
            line = process.stderr.read()[-2000:].strip() or b"it ended at once"
        process.stderr.close()  # it answers on sockets from now on
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

    async def pid(self) -> int:
        """The fork server's pid (started if it is not): the parent of the
        kernels it forks (see :meth:`spawn`)."""
        async with self._lock:
            await self._ensure()
            assert self._process is not None
            return self._process.pid

    async def parent(self) -> int:
        """The pid of the fork server's starter (started if it is not): the parent
        of the processes it starts (see :meth:`start`)."""
        async with self._lock:
            await self._ensure()
            assert self._starter is not None
            return self._starter

    async def spawn(
        self, request: Mapping[str, Any], holder: int, stdout: int, stderr: int
    ) -> tuple[int, int, socket.socket]:
        """Fork a kernel into the sandbox of pidfd ``holder``: its pid, a pidfd of
        it and the socket on which the fork server reports how it ended.

        ``holder`` goes with the connection itself: the fork server forks the
        kernel straight into the holder's PID namespace (``_kernels.py``)."""
        return await self._ask(b"k", request, [stdout, stderr], "kernel", holder)

    async def start(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, fds: Mapping[int, int]
    ) -> tuple[int, int, socket.socket]:
        """Start ``argv`` (the exec wrapper's command line) as a child of the fork
        server's starter (:meth:`parent`), with descriptors ``fds`` (its number ->
        the descriptor here; 0, 1 and 2 at least) and no other: its pid, a pidfd
        of it and the socket on which the starter reports how it ended (see
        ``_starter.py``)."""
        numbers = sorted(fds)
        if numbers[:3] != [0, 1, 2]:
            raise ValueError("a started process is given its stdin, stdout and stderr")
        request = {"argv": list(argv), "env": dict(env), "cwd": cwd, "keep": numbers[3:]}
        return await self._ask(b"p", request, [fds[n] for n in numbers], "process")

    async def _ask(
        self,
        kind: bytes,
        request: Mapping[str, Any],
        fds: list[int],
        what: str,
        holder: int | None = None,
    ) -> tuple[int, int, socket.socket]:
        payload = json.dumps(dict(request)).encode()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            async with self._lock:
                control = await self._ensure()
                # The request waits on the connection before the fork server has
                # it: one it refuses is dropped unread, and its answer is read.
                try:
                    socket.send_fds(ours, [payload], fds)
                except OSError as exc:  # EMSGSIZE: a request (its env) past the buffer
                    size = f"{len(payload):,} bytes"
                    raise ForkFailed(f"the request ({size}) was not taken: {exc}") from exc
                try:
                    brought = [theirs.fileno()] + ([] if holder is None else [holder])
                    socket.send_fds(control, [kind], brought)
                except OSError as exc:
                    raise ForkFailed(f"the fork server is gone: {exc}") from exc
            theirs.close()
            message, received = await _receive(ours, "the fork server")
            if len(received) != 1 or not isinstance(message.get("pid"), int):
                for fd in received:
                    os.close(fd)
                raise ForkFailed(f"the fork server sent no {what}")
        except BaseException:
            theirs.close()
            ours.close()
            raise
        return int(message["pid"]), received[0], ours

    async def aclose(self) -> None:
        """End the fork server, and with it the kernels and processes it still has."""
        control, process = self._control, self._process
        self._control = self._process = None
        if control is not None:
            control.close()
        if process is not None:
            with anyio.move_on_after(5):
                await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
            await self._end(process)
