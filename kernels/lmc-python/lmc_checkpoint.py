"""Checkpoints of a live kernel: a frozen copy-on-write image of its interpreter.

``__lmc_checkpoint__(path)`` (a builtin the runtime calls in a hidden run, between
cells) forks the kernel. The copy leaves the kernel's session, connects to the
runtime's unix socket at ``path``, keeps no other descriptor and waits there,
frozen: it costs only the pages the kernel writes after it. Each request on that
socket brings a socket of its own and the new kernel's stdout and stderr: the
copy forks a *monitor*, which forks a kernel revived from the image (the same
objects, modules, generators and ``random`` state) on fresh ZMQ sockets, as the
request's command line says; the monitor reports how it ended, and kills it if
the runtime goes first. The copy ends when its socket closes. Threads other than
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
import traceback

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
    """Wait for requests on ``conn``: each forks a monitor. Never returns."""
    try:
        os.close(ready)
        _keep_only(conn.fileno())
        with contextlib.suppress(Exception):
            _prepare()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # monitors are reaped by the system
        while True:
            data, fds, _, _ = socket.recv_fds(conn, _MAX_REQUEST, 3)
            if not data:
                os._exit(0)
            if len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                continue
            if os.fork() == 0:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                conn.close()
                _monitor(json.loads(data), *fds, left)
            for fd in fds:
                os.close(fd)
    except BaseException:
        os._exit(1)


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


def _monitor(request: dict, reply: int, stdout: int, stderr: int, left: str) -> None:
    """Fork the revived kernel; say its pid and how it ended on ``reply``."""
    channel = socket.socket(fileno=reply)
    child = 0
    try:
        bound_read, bound_write = os.pipe()
        child = os.fork()
        if child == 0:
            channel.close()
            os.close(bound_read)
            _revive(request, stdout, stderr, bound_write, left)
        for fd in (stdout, stderr, bound_write):
            os.close(fd)
        pidfd = os.pidfd_open(child)
        import select

        # Said once the kernel has bound its sockets (or ended): the runtime's
        # client then connects at once, not after a reconnection's delay. Unless
        # the runtime gives it up first (its end of the channel closes).
        starting = select.poll()
        starting.register(bound_read, select.POLLIN)
        starting.register(channel.fileno(), select.POLLIN)
        while bound_read not in [fd for fd, _ in starting.poll()]:
            if not channel.recv(1):
                raise ConnectionError("the runtime gave the kernel up")
        os.read(bound_read, 1)
        os.close(bound_read)
        socket.send_fds(channel, [json.dumps({"pid": child}).encode()], [pidfd])
        poller = select.poll()
        poller.register(channel.fileno(), select.POLLIN)
        poller.register(pidfd, select.POLLIN)
        while True:
            ready = [fd for fd, _ in poller.poll()]
            if pidfd in ready:
                break
            if not channel.recv(1):  # the runtime gave it up, or ended
                with contextlib.suppress(OSError):
                    os.killpg(child, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    os.kill(child, signal.SIGKILL)
                break
        _, status = os.waitpid(child, 0)
        with contextlib.suppress(OSError):
            channel.send(json.dumps({"status": status}).encode())
    except BaseException:
        # The runtime gave it up before it was told the pid (a rollback cancelled
        # or timed out): the kernel goes with its monitor, nobody would end it.
        if child > 0:
            with contextlib.suppress(OSError):
                os.killpg(child, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
    os._exit(0)


def _revive(request: dict, stdout: int, stderr: int, bound: int, left: str) -> None:
    """Become a kernel again, on the image's namespace. Never returns."""
    code = 1
    try:
        os.setsid()
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        _keep_only(1, 2, bound)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        sys.displayhook = sys.__displayhook__
        rand = sys.modules.get("random")
        if rand is not None and _OWN.get("random") is not None:
            rand.setstate(_OWN["random"])
        argv = [str(part) for part in request["argv"]]
        code = _reviver().new_kernel(argv, bound, left)  # type: ignore[attr-defined]
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    os._exit(code)


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
