"""The kernels of one registry's sessions share one ZMQ context
(``backends/jupyter/contexts.py``): its two threads (I/O and reaper) serve them
all, where each kernel had two of its own; a restarted kernel takes the same
one, and the last kernel's end ends it, its threads with it."""

from __future__ import annotations

import os

from lmc_runtime import Computer
from lmc_runtime.backends.jupyter.backend import JupyterBackend
from lmc_runtime.backends.registry import Registry

from ..conftest import run


def _zmq_threads() -> int:
    """This process's threads that libzmq started (named ``ZMQbg/...``)."""
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm", encoding="utf-8") as comm:
                names.append(comm.read().strip())
        except OSError:
            continue  # ended meanwhile
    return sum(1 for name in names if name.startswith("ZMQbg"))


def test_two_sessions_kernels_share_one_context_ended_with_the_last() -> None:
    before = _zmq_threads()
    registry = Registry()
    backend = registry.get("python")
    assert isinstance(backend, JupyterBackend)
    with Computer(registry=registry) as first, Computer(registry=registry) as second:
        assert run(first, "print(1)").output == "1\n"
        assert run(second, "print(2)").output == "2\n"
        assert backend._contexts.users == 2
        assert _zmq_threads() == before + 2
        first.restart("python")
        assert run(first, "print(3)").output == "3\n"
        assert backend._contexts.users == 2
        assert _zmq_threads() == before + 2
    assert backend._contexts.users == 0
    assert _zmq_threads() == before


def test_a_kernel_takes_no_control_socket_of_the_managers_own() -> None:
    """jupyter_client's manager connects a control socket at every start, for a
    graceful shutdown request the runtime never sends (it kills, and interrupts
    by signal): a socket, a connection and an I/O thread's work a session less.
    What stays open is the client's: shell, stdin and control (DEALER), IOPub (SUB)."""
    registry = Registry()
    backend = registry.get("python")
    assert isinstance(backend, JupyterBackend)
    with Computer(registry=registry) as computer:
        assert run(computer, "print(1)").output == "1\n"
        (context,) = backend._contexts._held
        kinds = sorted(s.type.name for s in context._sockets if not s.closed)
    assert kinds.count("DEALER") == 3 and kinds.count("SUB") == 1, kinds
