"""Checkpoints of a live kernel: a frozen copy-on-write image of its interpreter.

``__lmc_checkpoint__(path)`` (a builtin the runtime calls in a hidden run, between
cells) forks the kernel. The copy leaves the kernel's session, connects to the
runtime's unix socket at ``path``, keeps no other descriptor and waits there,
frozen: it costs only the pages the kernel writes after it. Each request on that
socket brings a socket of its own and the new kernel's stdout and stderr. The
copy hands it to a *monitor* it forked ahead (a spare: forking an image of
100 MB takes milliseconds, so not while a rollback waits), which forks a kernel
revived from the image (the same objects, modules, generators and ``random``
state) on fresh ZMQ sockets, as the request's command line says
(``lmc_revive.py``); the monitor reports how it ended, and kills it if the
runtime goes first. Once that kernel is up, the copy forks the next spare. The
copy ends when its socket closes, and its spare with it. Threads other than
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
    """Wait for requests on ``conn``: each goes to the spare monitor, forked ahead
    (a fork of this image costs milliseconds per 100 MB: not while a rollback
    waits), and the next spare is forked. Never returns."""
    try:
        os.close(ready)
        _keep_only(conn.fileno())
        with contextlib.suppress(Exception):
            _prepare()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # monitors are reaped by the system
        spare = _spare(conn, left)
        while True:
            data, fds, _, _ = socket.recv_fds(conn, _MAX_REQUEST, 3)
            if not data:
                os._exit(0)
            if len(fds) == 3:
                try:
                    socket.send_fds(spare, [data], fds)
                except OSError:  # the spare is gone: a monitor of its own
                    if os.fork() == 0:
                        _spare_serves(conn, spare, data, fds, left)
                else:
                    _until_up(spare, conn)
                spare.close()
            for fd in fds:
                os.close(fd)
            if len(fds) == 3:
                spare = _spare(conn, left)
    except BaseException:
        os._exit(1)


def _until_up(spare: socket.socket, conn: socket.socket) -> None:
    """Wait until the kernel the spare started is up (its monitor says so, or
    ends), a new request comes, or 10 s pass: the next spare's fork would slow
    the kernel's start down, on the same pages and the same CPUs."""
    import select

    waiting = select.poll()
    waiting.register(spare.fileno(), select.POLLIN)
    waiting.register(conn.fileno(), select.POLLIN)
    waiting.poll(10_000)


def _spare(conn: socket.socket, left: str) -> socket.socket:
    """Fork a monitor that waits for one request on the socket returned."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if os.fork() == 0:
        try:
            conn.close()  # the runtime's connection is the frozen copy's alone
            ours.close()
            data, fds, _, _ = socket.recv_fds(theirs, _MAX_REQUEST, 3)
        except BaseException:
            os._exit(1)
        _spare_serves(conn, theirs, data, fds, left)
    theirs.close()
    return ours


def _spare_serves(
    conn: socket.socket, channel: socket.socket, data: bytes, fds: list, left: str
) -> None:
    """In a monitor: serve request ``data`` (with ``fds``), or end without one."""
    try:
        conn.close()
        if not data or len(fds) != 3:  # the frozen copy ended first
            os._exit(0)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        request = json.loads(data)
    except BaseException:
        os._exit(1)
    _reviver().monitor(request, *fds, left, channel, _revive)  # type: ignore[attr-defined]


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
