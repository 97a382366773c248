"""Where a session's network namespaces hand their listening sockets to the server.

Under an egress policy every process a session starts gets a network namespace
of its own, set up by ``sandbox/_egressns.py``, which makes the namespace's
listening sockets and sends them here over a unix socket that only the
session's own host user can reach (it lives in the session's folder, which the
sandbox does not see). Each handover is checked (four sockets of the right
kinds, listening, all in one network namespace that is not the server's),
served by the gateway under its own key (``<session>/<n>``), and answered:
``ok``, or the reason it was refused, which the helper reports as the process's
failure to start. Nothing waits without a bound: a helper that says nothing
within :data:`RECEIVE_TIMEOUT` is dropped.

A handover's key is detached when the process it was made for ends (a pidfd of
the helper, which became bwrap), and every key when the session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import inspect
import logging
import os
import socket
import struct
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Protocol

from .hooks import SessionSockets

__all__ = ["RECEIVE_TIMEOUT", "EgressAttacher", "Handover", "HandoverRefused", "check_sockets"]

logger = logging.getLogger(__name__)

#: How long a connected helper may take to send its sockets.
RECEIVE_TIMEOUT = 10.0
#: The helper's message (see ``sandbox/_egressns.py``).
HELLO = b"lmc-egress-sockets 1"
_SIOCGSKNS = 0x894C
_SO_ACCEPTCONN = 30


class EgressAttacher(Protocol):
    """What the handover needs of the gateway (its ``attach`` and ``detach``
    may be coroutines)."""

    def attach(self, key: str, policy: Any, sockets: SessionSockets) -> object: ...

    def detach(self, key: str) -> object: ...


class HandoverRefused(Exception):
    """A helper's handover is not what it must be; the message says why."""


def _namespace(fd: int) -> int:
    """The inode of the network namespace socket ``fd`` lives in."""
    ns = fcntl.ioctl(fd, _SIOCGSKNS)
    try:
        return os.fstat(ns).st_ino
    finally:
        os.close(ns)


def check_sockets(data: bytes, fds: list[int]) -> SessionSockets:
    """The :class:`SessionSockets` of a helper's message; :class:`HandoverRefused`
    (with every descriptor closed) when it is anything else."""
    sockets: list[socket.socket] = []
    try:
        if data != HELLO or len(fds) != 4:
            raise HandoverRefused(f"expected 4 sockets after {HELLO!r}, got {len(fds)}")
        for fd in fds:
            try:
                sockets.append(socket.socket(fileno=fd))
            except OSError as exc:
                raise HandoverRefused(f"descriptor {fd} is no socket: {exc}") from None
        fds = []
        kinds = [socket.SOCK_STREAM, socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_STREAM]
        for sock, kind in zip(sockets, kinds, strict=True):
            if sock.family != socket.AF_INET or sock.type != kind:
                raise HandoverRefused(f"a socket of the wrong kind: {sock!r}")
            if kind == socket.SOCK_STREAM and not sock.getsockopt(
                socket.SOL_SOCKET, _SO_ACCEPTCONN
            ):
                raise HandoverRefused("a TCP socket that is not listening")
        spaces = {_namespace(sock.fileno()) for sock in sockets}
        if len(spaces) != 1:
            raise HandoverRefused("the sockets live in different network namespaces")
        if spaces == {os.stat("/proc/self/ns/net").st_ino}:
            raise HandoverRefused("the sockets live in the server's own network namespace")
    except BaseException:
        for sock in sockets:
            sock.close()
        for fd in fds:
            os.close(fd)
        raise
    for sock in sockets:
        sock.setblocking(False)
    return SessionSockets(*sockets)


async def _maybe(result: object) -> None:
    if inspect.isawaitable(result):
        await result


class Handover:
    """A session's handover socket at ``path``, owned by ``owner`` (uid, gid)
    when the session has a host user of its own. :meth:`start` it, then
    :meth:`aclose` it when the session ends."""

    def __init__(
        self,
        path: Path,
        gateway: EgressAttacher,
        key: str,
        policy: Any,
        owner: tuple[int, int] | None = None,
    ) -> None:
        self.path = path
        self._gateway = gateway
        self._key = key
        self._policy = policy
        self._owner = owner
        self._listener: socket.socket | None = None
        self._task: asyncio.Task[None] | None = None
        self._count = 0
        #: Attached keys and the pidfd of the process each was made for.
        self.attached: dict[str, int | None] = {}
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        """Listen at ``path`` (reachable by the session's user alone)."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
        folder = os.open(self.path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path.name, dir_fd=folder)
            listener.bind(f"/proc/self/fd/{folder}/{self.path.name}")
            os.chmod(self.path.name, 0o600, dir_fd=folder, follow_symlinks=False)
            if self._owner is not None:
                os.chown(self.path.name, *self._owner, dir_fd=folder, follow_symlinks=False)
        except BaseException:
            listener.close()
            raise
        finally:
            os.close(folder)
        listener.listen(16)
        self._listener = listener
        self._task = asyncio.get_running_loop().create_task(self._serve(listener))

    async def _serve(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(listener)
            self._spawn(self._one(conn))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _one(self, conn: socket.socket) -> None:
        with conn:
            try:
                async with asyncio.timeout(RECEIVE_TIMEOUT):
                    await _readable(conn)
                data, fds, _, _ = socket.recv_fds(conn, 256, 8)
                sockets = check_sockets(data, fds)
            except (TimeoutError, OSError, HandoverRefused) as exc:
                logger.warning("session %s: a refused handover: %s", self._key, exc)
                with contextlib.suppress(OSError):
                    conn.send(f"no: {exc}".encode())
                return
            await self._attach(conn, sockets)

    async def _attach(self, conn: socket.socket, sockets: SessionSockets) -> None:
        if self._closing:
            sockets.close()
            conn.send(b"no: the session is ending")
            return
        self._count += 1
        key = f"{self._key}/{self._count}"
        pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except OSError:
            pidfd = None
        try:
            await _maybe(self._gateway.attach(key, self._policy, sockets))
        except Exception as exc:
            logger.exception("session %s: the gateway cannot serve %s", self._key, key)
            sockets.close()
            if pidfd is not None:
                os.close(pidfd)
            conn.send(f"no: the gateway cannot serve it: {exc}".encode())
            return
        self.attached[key] = pidfd
        if pidfd is not None:
            loop = asyncio.get_running_loop()
            loop.add_reader(pidfd, lambda: self._spawn(self._ended(key)))
        conn.send(b"ok")

    async def _ended(self, key: str) -> None:
        """The process of ``key`` ended: its namespace is gone, stop serving it."""
        if key not in self.attached:
            return
        await self._detach(key)

    async def _detach(self, key: str) -> None:
        pidfd = self.attached.pop(key)
        if pidfd is not None:
            asyncio.get_running_loop().remove_reader(pidfd)
            os.close(pidfd)
        try:
            await _maybe(self._gateway.detach(key))
        except Exception:
            logger.exception("session %s: detaching %s failed", self._key, key)

    async def aclose(self) -> None:
        """Stop taking handovers and detach every key."""
        self._closing = True
        for task in [self._task, *self._tasks]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._listener is not None:
            self._listener.close()
        for key in list(self.attached):
            await self._detach(key)


async def _readable(sock: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(sock.fileno(), wake)
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())
