"""Checkpoints of a live kernel: a frozen copy-on-write image of its interpreter.

``__lmc_checkpoint__(path)`` (a builtin the runtime calls in a hidden run, between
cells) forks the kernel. The copy leaves the kernel's session, connects to the
runtime's unix socket at ``path``, keeps no other descriptor and waits there,
frozen: it costs only the pages the kernel writes after it. Each request on that
socket brings a socket of its own and the new kernel's stdout and stderr: the
copy forks a kernel revived from the image (the same objects, modules,
generators and ``random`` state) on fresh ZMQ sockets, as the request's command
line says, and reports on that socket its pid and how it ended (it reaps it).
The kernel ends itself, with its process group, once the runtime's end of that
socket closes, however the runtime went. The copy ends when its own socket
closes; the kernels it started stay. Threads other than
the main one, child processes and open sockets are not in the copy: the first
cell of a revived kernel says which were left behind.
"""

import builtins
import contextlib
import json
import os
import signal
import socket
import stat
import sys
import threading

#: The threads and socket descriptors the kernel itself has (set by install).
_OWN: dict = {"threads": set(), "sockets": set()}
_MAX_REQUEST = 1 << 17


def _sockets() -> set[tuple[int, int]]:
    """This process's network sockets (TCP, UDP), as (device, inode) pairs."""
    found: set[tuple[int, int]] = set()
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:  # no /proc (not Linux): checkpoints are refused there anyway
        return found
    for name in names:
        try:
            info = os.fstat(int(name))
            if not stat.S_ISSOCK(info.st_mode):
                continue
            with socket.socket(fileno=os.dup(int(name))) as sock:
                if sock.family in (socket.AF_INET, socket.AF_INET6):
                    found.add((info.st_dev, info.st_ino))
        except OSError:
            continue
    return found


def _children() -> int:
    count = 0
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/children") as file:
            count += len(file.read().split())
    return count


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def left_behind() -> str:
    """What the image will not have: user threads, child processes, open sockets."""
    threads = [
        t
        for t in threading.enumerate()
        if t is not threading.main_thread() and t.ident not in _OWN["threads"]
    ]
    parts = []
    count = len(threads)
    if threads:
        names = ", ".join(repr(t.name) for t in threads[:5])
        parts.append(f"{_plural(len(threads), 'thread')} ({names})")
    children = _children()
    count += children
    if children:
        parts.append(_plural(children, "subprocess"))
    sockets = len(_sockets() - _OWN["sockets"])
    count += sockets
    if sockets:
        parts.append(_plural(sockets, "network socket"))
    if not parts:
        return ""
    return f"{' and '.join(parts)} {'was' if count == 1 else 'were'} not carried"


def checkpoint(path: str) -> None:
    """Fork the frozen copy (see the module), which connects to ``path``; print
    its pid and what it left behind as one JSON line."""
    left = left_behind()
    with contextlib.suppress(Exception):
        _reviver().compile_once()  # type: ignore[attr-defined]
    # ``random`` reseeds itself in a forked child: its state is put back in the copy.
    rand = sys.modules.get("random")
    _OWN["random"] = rand.getstate() if rand is not None else None
    ready_read, ready_write = os.pipe()
    first = os.fork()
    if first == 0:
        try:
            os.close(ready_read)
            os.setsid()
            if os.fork() != 0:
                os._exit(0)  # the frozen copy is nobody's child but init's
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            conn.connect(path)
            os.write(ready_write, b"%d" % os.getpid())
        except BaseException:
            os._exit(1)
        _frozen(conn, ready_write, left)
    os.close(ready_write)
    os.waitpid(first, 0)
    with os.fdopen(ready_read, "rb") as ready:
        pid = ready.read().decode()
    if not pid:
        raise RuntimeError("the checkpoint's process did not connect to the runtime")
    print(json.dumps({"pid": int(pid), "left": left}))


def _keep_only(*kept: int) -> None:
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        if fd not in kept:
            os.dup2(null, fd)
    keep = {0, 1, 2, *kept}
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            with contextlib.suppress(OSError):
                os.close(int(name))


def _frozen(conn: socket.socket, ready: int, left: str) -> None:
    """Wait for requests on ``conn``: each forks a kernel (see :func:`_serve`).
    Never returns."""
    try:
        os.close(ready)
        _keep_only(conn.fileno())
        with contextlib.suppress(Exception):
            _prepare()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # its kernels: it reaps them itself
        _serve(conn, left)
    except BaseException:
        os._exit(1)
    os._exit(0)


def _reviver() -> object:
    """``lmc_revive.py``, from beside this file: what a revived kernel runs."""
    import importlib.util

    if "revive" not in _OWN:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lmc_revive.py")
        spec = importlib.util.spec_from_file_location("_lmc_revive", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _OWN["revive"] = module
    return _OWN["revive"]


def _prepare() -> None:
    """Once, in the frozen copy: what every kernel revived from it would do alike
    (see ``lmc_revive.prepare``)."""
    _reviver().prepare()  # type: ignore[attr-defined]


class _Kernel:
    """A kernel the frozen copy forked: the runtime's socket for it (``reply``), a
    pidfd of it and, until it said its sockets are bound (or ended), that pipe."""

    def __init__(self, pid: int, reply: socket.socket, bound: int) -> None:
        self.pid, self.reply, self.bound = pid, reply, bound
        self.pidfd = os.pidfd_open(pid)  # its child: the number is its until reaped
        self.reaped = False


def _serve(conn: socket.socket, left: str) -> None:
    """The frozen copy's loop: it forks a kernel for each request on ``conn`` and
    says on that request's socket the kernel's pid and pidfd (once its sockets
    are bound: the runtime's client connects at once, not after a reconnection's
    delay) and, once it ended, its wait status. The kernel holds on to the
    runtime itself (``lmc_revive.hold_on``). Returns when ``conn`` closes."""
    import select

    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    kernels: dict[int, _Kernel] = {}  # by its bound pipe and by its pidfd
    while True:
        events = [fd for fd, _ in poller.poll()]
        # Each event's kernel, found before any descriptor is opened or closed.
        ready = [(fd, kernels[fd]) for fd in events if fd in kernels]
        if conn.fileno() in events:  # a rollback waits on it: first
            data, fds, _, _ = socket.recv_fds(conn, _MAX_REQUEST, 3)
            if not data:
                return
            kernel = _start(data, fds, left)
            if kernel is not None:
                for fd in (kernel.bound, kernel.pidfd):
                    kernels[fd] = kernel
                    poller.register(fd, select.POLLIN)
        for fd, kernel in ready:
            try:
                if fd == kernel.bound:
                    _say_started(kernel, poller, kernels)
                elif fd == kernel.pidfd:
                    _say_ended(kernel, poller, kernels)
            except Exception:  # never the frozen copy's end: that kernel's alone
                if not kernel.reaped:
                    _kill(kernel.pid)
                    with contextlib.suppress(OSError):
                        os.waitpid(kernel.pid, 0)
                _forget(kernel, poller, kernels)


def _start(data: bytes, fds: list[int], left: str) -> "_Kernel | None":
    """Fork the kernel request ``data`` asks for: ``fds`` are the runtime's socket
    for it and its stdout and stderr."""
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None
    reply, stdout, stderr = fds
    child = 0
    try:
        request = json.loads(data)
        bound_read, bound_write = os.pipe()
        child = os.fork()
        if child == 0:
            try:
                _revive(request, reply, stdout, stderr, bound_write, left)
            finally:
                os._exit(1)
        os.close(bound_write)
        return _Kernel(child, socket.socket(fileno=reply), bound_read)
    except Exception:
        if child > 0:  # a kernel nobody would be told of
            _kill(child)
            with contextlib.suppress(OSError):
                os.waitpid(child, 0)
        with contextlib.suppress(OSError):
            os.close(reply)
        return None
    finally:
        os.close(stdout)
        os.close(stderr)


def _say_started(kernel: _Kernel, poller: object, kernels: dict[int, _Kernel]) -> None:
    """The kernel bound its sockets (or ended before): its pid and pidfd to the runtime.
    A runtime that gave it up already (the rollback cancelled or timed out) ends it."""
    if kernel.bound < 0:
        return
    poller.unregister(kernel.bound)  # type: ignore[attr-defined]
    del kernels[kernel.bound]
    os.close(kernel.bound)
    kernel.bound = -1
    try:
        message = json.dumps({"pid": kernel.pid}).encode()
        socket.send_fds(kernel.reply, [message], [kernel.pidfd], socket.MSG_NOSIGNAL)
    except OSError:
        _kill(kernel.pid)


def _say_ended(kernel: _Kernel, poller: object, kernels: dict[int, _Kernel]) -> None:
    """The kernel ended: it is reaped, and its wait status said to the runtime."""
    _say_started(kernel, poller, kernels)
    _, status = os.waitpid(kernel.pid, 0)
    kernel.reaped = True
    with contextlib.suppress(OSError):
        kernel.reply.send(json.dumps({"status": status}).encode(), socket.MSG_NOSIGNAL)
    _forget(kernel, poller, kernels)


def _forget(kernel: _Kernel, poller: object, kernels: dict[int, _Kernel]) -> None:
    for fd in (kernel.bound, kernel.pidfd):
        if kernels.pop(fd, None) is not None:
            poller.unregister(fd)  # type: ignore[attr-defined]
            os.close(fd)
    kernel.bound = kernel.pidfd = -1
    kernel.reply.close()


def _kill(pid: int) -> None:
    """SIGKILL kernel ``pid`` and its process group."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _revive(request: dict, reply: int, stdout: int, stderr: int, bound: int, left: str) -> None:
    """Become a kernel again, on the image's namespace (``lmc_revive.revive``).
    Never returns."""
    try:
        _reviver().revive(  # type: ignore[attr-defined]
            request, (reply, stdout, stderr, bound), left, _OWN.get("random"), _keep_only
        )
    finally:
        os._exit(1)


def _note_once(ip: object) -> None:
    note = builtins.__dict__.pop("__lmc_checkpoint_note__", None)
    if not note:
        return

    def pre_run_cell(info: object = None) -> None:
        ip.events.unregister("pre_run_cell", pre_run_cell)  # type: ignore[attr-defined]
        sys.stderr.write(f"[lmc] {note} into this copy of the interpreter\n")

    ip.events.register("pre_run_cell", pre_run_cell)  # type: ignore[attr-defined]


def install(ip: object) -> None:
    """``__lmc_checkpoint__`` in builtins; what the kernel has of its own now."""
    _OWN["threads"] = {t.ident for t in threading.enumerate()}
    _OWN["sockets"] = _sockets()
    builtins.__lmc_checkpoint__ = checkpoint  # type: ignore[attr-defined]
    _note_once(ip)
