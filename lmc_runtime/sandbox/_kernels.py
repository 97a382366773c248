"""The fork server's loop: a broker forked for each kernel, and every kernel
reaped and reported by the fork server itself.

For each connection the runtime brings, the fork server forks a *broker*
(:mod:`._broker`), which reads the request, forks the kernel into its sandbox,
tells the runtime the kernel's pid (with a pidfd) and the fork server the pid
alone (on a pipe), and exits. The fork server is a child subreaper, so the
kernel becomes its child; it keeps the connection, and

- when the kernel ends, reaps it and sends ``{"status": <wait status>}`` on the
  connection (as :func:`~lmc_runtime.exit_report.read_exit` reads it);
- when the runtime closes its end first (it gave the kernel up, or ended), kills it.

A connection may ask for a process instead (``p``: a kernel's holder, see
:mod:`._starter`): the process forked for it reads the request and becomes
that process, which the fork server looks after in the same way.

No process stays per kernel but the kernel: a resident broker was a Python
process of its own for every session. The fork server never reads a request:
what it keeps of a kernel is its pid and its connection. When the runtime
closes the control socket, the fork server kills the kernels it still has and
ends.

Stdlib only: imported by the fork server by its file name.
"""

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["serve"]

_PR_SET_CHILD_SUBREAPER = 36

#: A broker or a starter: serves one connection, given the pipe it names its
#: process on; never returns.
Serve = Callable[[socket.socket, int], None]


@dataclass
class _Kernels:
    """What the fork server keeps: pipes on which brokers will name their kernel,
    the kernels named, and the statuses of kernels reaped before their broker's
    word was read."""

    #: A broker's (or a started process's) pipe, read end -> the connection its
    #: kernel was asked on, and the started process's pid (None for a broker).
    named_on: dict[int, tuple[socket.socket, int | None]] = field(default_factory=dict)
    #: A kernel's pid -> its connection.
    by_pid: dict[int, socket.socket] = field(default_factory=dict)
    #: A connection's descriptor -> its kernel's pid.
    by_conn: dict[int, int] = field(default_factory=dict)
    #: Pids reaped that no broker had named yet -> their wait status.
    early: dict[int, int] = field(default_factory=dict)
    brokers: set[int] = field(default_factory=set)


def _subreaper() -> None:
    """Adopt what the brokers leave: their kernels become this process's children."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_CHILD_SUBREAPER")


def _report(conn: socket.socket, status: int) -> None:
    with contextlib.suppress(OSError):
        socket.send_fds(conn, [json.dumps({"status": status}).encode()], [])
    conn.close()


def _named(state: _Kernels, fd: int, watch: Callable[[int], None]) -> None:
    """A broker's pipe is readable: the kernel's pid, or nothing (no kernel)."""
    conn, started = state.named_on.pop(fd)
    try:
        data = os.read(fd, 32)
    except OSError:
        data = b""
    os.close(fd)
    if not data.strip().isdigit():
        conn.close()  # the broker (or the process) failed, and told the runtime why
        if started is not None:
            state.early.pop(started, None)
        return
    pid = int(data)
    if pid in state.early:
        _report(conn, state.early.pop(pid))
        return
    state.by_pid[pid] = conn
    state.by_conn[conn.fileno()] = pid
    watch(conn.fileno())


def _given_up(state: _Kernels, fd: int, forget: Callable[[int], None]) -> None:
    """A kernel's connection is readable: the runtime's end closed (or it said
    something, which means nothing): kill the kernel; its reaping is not reported."""
    pid = state.by_conn[fd]
    conn = state.by_pid[pid]
    try:
        said = conn.recv(1)
    except OSError:
        said = b""
    if said:
        return
    forget(fd)
    del state.by_conn[fd]
    conn.close()
    with contextlib.suppress(OSError):  # still this process's unreaped child
        os.kill(pid, signal.SIGKILL)


def _reap(state: _Kernels, forget: Callable[[int], None]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in state.brokers:
            state.brokers.discard(pid)
            continue
        conn = state.by_pid.pop(pid, None)
        if conn is None:
            state.early[pid] = status  # its broker's word is still in its pipe
            continue
        if conn.fileno() in state.by_conn:  # not given up: the runtime waits for it
            forget(conn.fileno())
            del state.by_conn[conn.fileno()]
            _report(conn, status)


def _keep_only(*kept: int) -> None:
    """Close every descriptor of this process but stdio and ``kept``."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in kept:
            with contextlib.suppress(OSError):
                os.close(fd)


def _end_all(state: _Kernels) -> None:
    for pid in state.by_pid:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def serve(control: socket.socket, broker: Serve, starter: Serve) -> None:
    """Fork ``broker(connection, pipe)`` for each kernel's connection ``control``
    brings, ``starter(connection, pipe)`` for each process's, and look after
    the kernels and processes (see the module's docstring), until ``control``
    closes."""
    _subreaper()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    state = _Kernels()
    polled = select.poll()
    for fd in (control.fileno(), wake_read):
        polled.register(fd, select.POLLIN)

    def watch(fd: int) -> None:
        polled.register(fd, select.POLLIN)

    def forget(fd: int) -> None:
        with contextlib.suppress(KeyError):
            polled.unregister(fd)

    try:
        while True:
            for fd, _ in polled.poll():
                if fd == wake_read:
                    with contextlib.suppress(OSError):
                        os.read(wake_read, 512)
                    _reap(state, forget)
                elif fd in state.named_on:
                    forget(fd)
                    _named(state, fd, watch)
                elif fd in state.by_conn:
                    _given_up(state, fd, forget)
                elif fd == control.fileno() and not _fork(control, state, watch, broker, starter):
                    return  # the runtime closed its end, or ended
    finally:
        _end_all(state)


def _fork(
    control: socket.socket,
    state: _Kernels,
    watch: Callable[[int], None],
    broker: Serve,
    starter: Serve,
) -> bool:
    """Take one connection from ``control`` and fork its broker (``k``) or the
    process it asks for (``p``); False once ``control`` has closed."""
    data, fds, _, _ = socket.recv_fds(control, 16, 4)
    if not data and not fds:
        return False
    for fd in fds[1:]:
        os.close(fd)
    if not fds:
        return True
    told, tell = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _keep_only(fds[0], tell)  # not the other kernels' connections, nor the control
        (starter if data == b"p" else broker)(socket.socket(fileno=fds[0]), tell)
        os._exit(0)  # neither returns; in case one does
    os.close(tell)
    started = pid if data == b"p" else None
    if started is None:
        state.brokers.add(pid)
    state.named_on[told] = (socket.socket(fileno=fds[0]), started)
    watch(told)
    return True
