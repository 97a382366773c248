"""The fork server: Python kernels forked into their sandboxes, already imported.

Run as ``python _zygote.py FD`` by :class:`~.forks.ForkServer`, with no
environment but the locale; FD is its end of a ``SOCK_SEQPACKET`` pair. It
imports what a kernel imports at start, says ``ready``, and for each descriptor
FD brings (a connection for one kernel) forks a *broker* (:mod:`._broker`),
which forks the kernel into the session's sandbox. It never reads a request
itself: nothing of one session is ever in the memory the next kernel is forked
from. What kernels forked from one server share: its address layout and its
string hash seed (``random`` reseeds itself at fork).

Stdlib only, besides the kernel's imports.
"""

import contextlib
import gc
import importlib
import os
import signal
import socket
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:
    from . import _broker
else:  # run as a script (see forks.py): this file's folder is sys.path[0]
    import _broker

__all__: list[str] = []

#: Imported at a kernel's start for features the runtime never uses (as in lmc_kernel.py).
_SKIPPED = ("debugpy", "jedi")
#: What a kernel imports until it answers its first request (not the host's
#: network interfaces, which jupyter_client looks up then: they are the sandbox's).
_PRELOADED = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "ipykernel.debugger",
    "IPython.core.completerlib",
    "faulthandler",
    "psutil",
    "pwd",
    "tornado.gen",
    "tornado.locks",
    "tornado.platform.asyncio",
    "tornado.queues",
)


def preload() -> None:
    """Import what a kernel imports at start, without what it never uses."""
    blocked = [name for name in _SKIPPED if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        for name in _PRELOADED:
            importlib.import_module(name)
    finally:
        for name in blocked:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def serve(control: socket.socket) -> None:
    """Fork a broker for each connection ``control`` brings, until it closes."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    for ready in _broker.readable(control.fileno(), wake_read):
        if wake_read in ready:
            with contextlib.suppress(OSError):
                os.read(wake_read, 512)
            _reap()
        if control.fileno() not in ready:
            continue
        data, fds, _, _ = socket.recv_fds(control, 16, 4)
        if not data and not fds:
            return  # the runtime closed its end, or ended
        for fd in fds[1:]:
            os.close(fd)
        if not fds:
            continue
        if os.fork() == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (wake_read, wake_write):
                os.close(fd)
            control.close()
            _broker.broker(socket.socket(fileno=fds[0]))
        os.close(fds[0])


def main() -> None:
    del sys.path[0]  # this file's folder
    # Imported from that folder by its file name: out of sys.modules, it cannot stand
    # in for a module of that name a kernel's code imports.
    for name in ("_broker", "_handoff", "_seccomp"):
        sys.modules.pop(name, None)
    os.chdir("/")
    control = socket.socket(fileno=int(sys.argv[1]))
    preload()
    # Out of the collector's sight: a collection in a kernel would otherwise write
    # to (and so copy) every page of these objects it shares with this process.
    gc.freeze()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    serve(control)


if __name__ == "__main__":
    main()
