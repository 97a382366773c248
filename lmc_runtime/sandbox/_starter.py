"""A process the fork server starts for the runtime: a forked kernel's holder,
``python _exec.py OPTIONS -- bwrap ...`` as the runtime would start it, without
a Python interpreter started for the wrapper (some 10 ms and 6 ms of CPU).

Run in a process forked for it by the fork server's *starter*: a small process
the fork server forks of itself as it starts, before it imports what a kernel
imports, which serves these requests (:func:`~._kernels.fork_starter`). A fork
of the fork server itself would copy its page tables (some 60 MiB mapped),
copy the pages the wrapper's code writes, and tear all of it down again as it
becomes bwrap. The process reads the request on its connection (the command
line, environment, working folder, and which of the descriptors it brings go
where), takes a session of its own, names itself to the starter on a pipe and
to the runtime (its pid, with a pidfd), and runs the exec wrapper's ``main``,
which replaces it with bwrap. It is then the starter's child: the starter
reports how it ends, and kills it if the runtime gives it up; its
``--die-with-parent`` is the starter's, which dies with the fork server.

Stdlib only: imported by the fork server by its file name. The exec wrapper is
imported by the starter (:func:`prepare`; its import puts this folder on
``sys.path``, which no kernel may inherit: no kernel is forked from the starter).
"""

import contextlib
import fcntl
import json
import os
import socket
import sys
from typing import Any, NoReturn

__all__ = ["prepare", "start"]

#: The largest request read.
_MAX_REQUEST = 1 << 17
#: What the command line must begin with: the exec wrapper, run as the runtime runs it.
_WRAPPER = ("-I", "-S")


def _fail(text: str) -> NoReturn:
    with contextlib.suppress(OSError):
        os.write(2, f"lmc fork server: {text}\n".encode("utf-8", "replace"))
    os._exit(127)


def _place(fds: list[int], targets: list[int]) -> None:
    """Each of ``fds`` at its number in ``targets``, every other descriptor closed."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in fds]  # out of the way
    for fd, target in zip(high, targets, strict=True):
        os.dup2(fd, target, inheritable=True)
    kept = set(targets)
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in kept:
            with contextlib.suppress(OSError):
                os.close(int(name))


def _request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, _MAX_REQUEST, 16)
    request = json.loads(data)
    if not isinstance(request, dict):
        raise ValueError("a request is a JSON object")
    targets = [0, 1, 2, *(int(fd) for fd in request.get("keep", []))]
    if len(fds) != len(targets):
        raise ValueError(f"{len(targets)} descriptors named, {len(fds)} brought")
    return request, fds


def start(conn: socket.socket, tell: int) -> NoReturn:
    """Become the process ``conn`` asks for (see the module's docstring)."""
    try:
        request, fds = _request(conn)
        argv = [str(a) for a in request["argv"]]
        if len(argv) < 5 or tuple(argv[1:3]) != _WRAPPER or not argv[3].endswith("_exec.py"):
            raise ValueError("only the exec wrapper is started this way")
        env = {str(k): str(v) for k, v in request["env"].items()}
        cwd = str(request["cwd"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        _fail(f"a process could not be started: {exc}")
    pid = os.getpid()
    try:
        os.setsid()
        os.chdir(cwd)
        os.write(tell, b"%d\n" % pid)  # first: the fork server then reports its end
        pidfd = os.pidfd_open(pid)
        socket.send_fds(conn, [json.dumps({"pid": pid}).encode()], [pidfd])
        _place(fds, [0, 1, 2, *(int(fd) for fd in request.get("keep", []))])
    except OSError as exc:
        _fail(f"a process could not be started: {exc}")
    os.environ.clear()
    os.environ.update(env)
    _exec_main()(argv[4:])
    _fail("the exec wrapper returned")


def prepare() -> None:
    """In the starter, once: import the exec wrapper, so that no process it forks
    imports it again."""
    _exec_main()


def _exec_main() -> Any:
    """The exec wrapper's ``main``, imported from this folder."""
    if __package__:
        from . import _exec

        return _exec.main
    if "_exec" not in sys.modules:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    return __import__("_exec").main
