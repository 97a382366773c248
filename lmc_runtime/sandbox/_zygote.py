"""The fork server: Python kernels forked into their sandboxes, already imported.

Run as ``python _zygote.py FD [CACHE]`` by :class:`~.forks.ForkServer`, with
no environment but the locale; FD is its end of a ``SOCK_SEQPACKET`` pair,
CACHE the folder where what its probe found is kept (``_hotcache.py``). It
imports what a kernel imports at start, does once the work every kernel's start
would repeat alike (:mod:`._warm`), says ``ready`` and the pid of its starter
(the parent of the processes it starts, :mod:`._starter`), and for each descriptor
FD brings (a connection for one kernel, with a pidfd of a process in the
session's sandbox) forks the kernel into that sandbox's PID namespace, where it
enters the sandbox (:mod:`._child`); the fork server reaps it and reports its end
(:mod:`._kernels`). It never reads a request itself: nothing of one session is
ever in the memory the next kernel is forked from. What kernels forked from one
server share: its address layout and its string hash seed (``random`` reseeds
itself at fork).

Stdlib only, besides the kernel's imports.
"""

import gc
import importlib
import os
import socket
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:
    from . import _child, _handoff, _kernels, _seccomp, _starter, _warm
else:  # run as a script (see forks.py): this file's folder is sys.path[0]
    import _child
    import _handoff
    import _kernels
    import _seccomp
    import _starter
    import _warm

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


#: This folder's modules the fork server imports.
_OWN: tuple[str, ...] = (
    "_births",
    "_child",
    "_gather",
    "_handoff",
    "_hot",
    "_hotcache",
    "_kernels",
)
_OWN += ("_seccomp", "_starter", "_warm")

#: Seconds from the fork server's start by which its probe must be done (the
#: runtime gives up on a fork server not ready in 60).
_GATHER_BY = 40.0


def main() -> None:
    started = time.monotonic()
    del sys.path[0]  # this file's folder
    # Imported from that folder by its file name: out of sys.modules, it cannot stand
    # in for a module of that name a kernel's code imports.
    for name in _OWN:
        sys.modules.pop(name, None)
    os.chdir("/")
    control = socket.socket(fileno=int(sys.argv[1]))
    # The process that starts the sandboxes' holders, forked while this one is
    # small: a fork of it is cheap (_starter.py).
    starter, starting = _kernels.fork_starter(control, _starter.start, _starter.prepare)
    preload()
    # The work every kernel's start would repeat alike. Its garbage is left to be
    # frozen, not collected: a collection's holes, filled by a kernel's new
    # objects, would copy their pages (measured: 0.25 MiB more a kernel).
    # And the code a kernel runs, gathered: a probe kernel's, and its own start's,
    # in time for the runtime's bound on this start (forks.py: 60 s).
    cache = sys.argv[2] if len(sys.argv) > 2 else None
    _warm.warm(_child._run_script, (_child, _handoff, _seccomp), started + _GATHER_BY, cache)
    # Out of the collector's sight: a collection in a kernel would otherwise write
    # to (and so copy) every page of these objects it shares with this process.
    gc.freeze()
    sys.stdout.write(f"ready {starter}\n")
    sys.stdout.flush()
    _kernels.serve(control, _child.start, _starter.start, starting)


if __name__ == "__main__":
    main()
