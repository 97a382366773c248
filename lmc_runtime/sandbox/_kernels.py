"""The fork server's loop: every kernel forked straight into its sandbox, and
reaped and reported by the fork server itself.

For each connection the runtime brings with a pidfd of a *holder* (a process
in the session's sandbox), the fork server sets the PID namespace its children
are born in to the holder's (``setns``), forks, and sets it back to its own:
the kernel is born in the sandbox's PID namespace, a child of the fork server,
and no other process is forked for it. The process forked (:mod:`._child`)
reads the request, enters the holder's other namespaces, names itself to the
fork server (its pid, on a pipe) and to the runtime (with a pidfd), and
becomes the kernel. The fork server keeps the connection, and

- when the kernel ends, reaps it and sends ``{"status": <wait status>}`` on the
  connection (as :func:`~lmc_runtime.exit_report.read_exit` reads it);
- when the runtime closes its end first (it gave the kernel up, or ended), kills it.

A connection may ask for a process instead (``p``: a kernel's holder, see
:mod:`._starter`). The fork server hands it to its *starter*, a small process
it forked of itself as it started (:func:`fork_starter`), which serves it in
the same way: the process forked for it reads the request and becomes that
process, which the starter looks after as the fork server looks after kernels.

No process stays per kernel but the kernel. The fork server never reads a
request: what it keeps of a kernel is its pid and its connection, and of the
holder only the descriptor, until the fork. When the runtime closes the
control socket, the fork server kills the kernels it still has and ends.

Stdlib only: imported by the fork server by its file name.
"""

import contextlib
import json
import os
import select
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:
    from . import _births
else:  # imported by the fork server by its file name, from this file's folder
    import _births

__all__ = ["fork_starter", "serve"]

#: A started process: serves one connection, given the pipe it names itself on;
#: never returns.
Serve = Callable[[socket.socket, int], None]
#: A kernel: the same, given the holder's pidfd too.
Start = Callable[[socket.socket, int, int], None]


@dataclass
class _Kernels:
    """What the fork server keeps: pipes on which kernels (and processes) will
    name themselves, the ones named, and the statuses of those reaped before
    their word was read."""

    #: A kernel's (or a started process's) pipe, read end -> the connection it
    #: was asked on, and its pid.
    named_on: dict[int, tuple[socket.socket, int]] = field(default_factory=dict)
    #: A kernel's pid -> its connection.
    by_pid: dict[int, socket.socket] = field(default_factory=dict)
    #: A connection's descriptor -> its kernel's pid.
    by_conn: dict[int, int] = field(default_factory=dict)
    #: Pids forked here that have not named themselves yet.
    unnamed: set[int] = field(default_factory=set)
    #: Of those, the ones reaped before their word was read -> their wait status.
    early: dict[int, int] = field(default_factory=dict)


def _report(conn: socket.socket, status: int) -> None:
    with contextlib.suppress(OSError):
        socket.send_fds(conn, [json.dumps({"status": status}).encode()], [])
    conn.close()


def _named(state: _Kernels, fd: int, watch: Callable[[int], None]) -> None:
    """A kernel's (or process's) pipe is readable: its pid, or nothing (it failed)."""
    conn, started = state.named_on.pop(fd)
    try:
        data = os.read(fd, 32)
    except OSError:
        data = b""
    os.close(fd)
    state.unnamed.discard(started)
    if data.strip() != b"%d" % started:
        conn.close()  # it failed, and told the runtime why
        state.early.pop(started, None)
        return
    pid = started
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
        _ended(state, pid, status, forget)


def _ended(state: _Kernels, pid: int, status: int, forget: Callable[[int], None]) -> None:
    """Child ``pid`` was reaped: report it, if the runtime waits for it."""
    conn = state.by_pid.pop(pid, None)
    if conn is None:
        # Its word is still in its pipe; anything else (what this process adopted,
        # or one that failed before it named itself) is forgotten, or a later
        # process given the same pid would be reported ended at once.
        if pid in state.unnamed:
            state.early[pid] = status
        return
    if conn.fileno() in state.by_conn:  # not given up: the runtime waits for it
        forget(conn.fileno())
        del state.by_conn[conn.fileno()]
        _report(conn, status)


def _end_all(state: _Kernels) -> None:
    for pid in state.by_pid:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def fork_starter(
    control: socket.socket, starter: Serve, prepare: Callable[[], None]
) -> tuple[int, socket.socket]:
    """Fork the process that serves this one's ``p`` connections (the starter,
    see the module's docstring): its pid, and the socket to bring it them on.

    It dies with this process (``PR_SET_PDEATHSIG``), and the processes it starts
    die with it (theirs); when this process ends its end of that socket, the
    starter kills them and ends. It runs ``prepare()`` first."""
    parent = os.getpid()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        try:
            ours.close()
            control.close()
            if not _births.die_with(parent):
                os._exit(0)  # the fork server is already gone
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)  # the runtime reads the fork server's "ready" there
            os.close(null)
            prepare()
            serve(theirs, None, starter)
        finally:
            os._exit(0)
    theirs.close()
    return pid, ours


def serve(
    control: socket.socket,
    kernel: Start | None,
    starter: Serve,
    starting: socket.socket | None = None,
) -> None:
    """Fork ``kernel(connection, pipe, holder)`` into the holder's PID namespace
    for each kernel's connection ``control`` brings, and ``starter(connection,
    pipe)`` for each process's, or hand those to the starter on ``starting``;
    look after the kernels and processes (see the module's docstring), until
    ``control`` closes."""
    births = _births.Births()
    serving = _Serving(kernel, starter, starting)
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
                elif fd == control.fileno() and not _fork(control, state, watch, births, serving):
                    return  # the runtime closed its end, or ended
    finally:
        _end_all(state)


@dataclass
class _Serving:
    """What serves a connection: the kernel's start, the process's, and the
    starter's socket (None in the starter itself, which forks the processes)."""

    kernel: Start | None
    starter: Serve
    starting: socket.socket | None

    def hand_over(self, conn: int) -> None:
        """Bring ``conn`` (a ``p`` connection) to the starter, or refuse it if the
        starter is gone or not taking any (never waiting on it): a process this
        one started could not be the holder's parent it names, the starter, and
        the runtime starts the kernel the usual way."""
        assert self.starting is not None
        try:
            socket.send_fds(self.starting, [b"p"], [conn], socket.MSG_DONTWAIT)
        except OSError as exc:
            _refuse(socket.socket(fileno=conn), f"its starter took no process: {exc}")
            return
        os.close(conn)


def _fork(
    control: socket.socket,
    state: _Kernels,
    watch: Callable[[int], None],
    births: _births.Births,
    serving: _Serving,
) -> bool:
    """Take one connection from ``control`` and fork its kernel (``k``, with the
    holder's pidfd) or the process it asks for (``p``); False once ``control``
    has closed."""
    data, fds, _, _ = socket.recv_fds(control, 16, 4)
    if not data and not fds:
        return False
    if not fds:
        return True
    conn, brought = fds[0], fds[1:]
    holder = brought.pop(0) if data == b"k" and brought else None
    for fd in brought:
        os.close(fd)
    if data == b"k" and (holder is None or serving.kernel is None):
        if holder is not None:
            os.close(holder)
        _refuse(socket.socket(fileno=conn), "a kernel is asked for with a holder")
        return True
    if data != b"k" and serving.starting is not None:
        serving.hand_over(conn)
        return True
    told, tell = os.pipe()
    try:
        pid = os.fork() if holder is None else births.fork_into(holder)
    except OSError as exc:
        for fd in (told, tell) + (() if holder is None else (holder,)):
            os.close(fd)
        _refuse(socket.socket(fileno=conn), f"could not fork: {exc}")
        return True
    if pid == 0:
        try:  # never back into this process's loop (whose end kills every kernel)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            # Not the other kernels' connections, nor the control socket.
            _births.keep_only(conn, tell, *(() if holder is None else (holder,)))
            if holder is None:
                serving.starter(socket.socket(fileno=conn), tell)
            elif serving.kernel is not None:
                serving.kernel(socket.socket(fileno=conn), tell, holder)
        finally:
            os._exit(127)  # neither returns
    os.close(tell)
    if holder is not None:
        os.close(holder)
    state.unnamed.add(pid)
    state.named_on[told] = (socket.socket(fileno=conn), pid)
    watch(told)
    return True


def _refuse(conn: socket.socket, reason: str) -> None:
    """Say why on ``conn`` and close it, its request (the one message the runtime
    sends, before it brings the connection) dropped unread: received into one
    byte (a JSON object's ``{``; with no room the kernel leaves it queued), the
    rest cut off, its descriptors closed. Else the runtime would read a reset
    connection, not the reason."""
    with contextlib.suppress(OSError):
        socket.send_fds(conn, [json.dumps({"error": reason}).encode()], [])
        conn.recv_into(bytearray(1), 1, socket.MSG_TRUNC | socket.MSG_DONTWAIT)
    conn.close()
