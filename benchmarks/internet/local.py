"""The host's side of the test internet: its addresses, free ports, and the
servers' processes (started to die with their parent, ready when they say so)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import select
import signal
import socket
import time
from typing import IO

__all__ = ["bindable", "die_with_parent", "free_port", "outward_address", "ready"]

_READY_S = 30


def outward_address() -> str | None:
    """The host's address towards the outside (no packet is sent), if it has a route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        return str(probe.getsockname()[0])


def bindable(host: str) -> bool:
    """Whether this host has ``host`` (IPv6 loopback may be off)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
    except OSError:
        return False
    return True


def free_port(hosts: list[str]) -> int:
    """A port free on every one of ``hosts``."""
    for _ in range(200):
        port = 20000 + secrets.randbelow(20000)
        with contextlib.ExitStack() as stack:
            try:
                for host in hosts:
                    family = socket.AF_INET6 if ":" in host else socket.AF_INET
                    sock = stack.enter_context(socket.socket(family, socket.SOCK_STREAM))
                    sock.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError("no port free on every host address")


def die_with_parent() -> None:
    """In the child before exec: SIGKILL when the process that started it ends,
    so that a run that dies leaves no server behind (PR_SET_PDEATHSIG)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)


def ready(stream: IO[bytes] | None) -> bool:
    """Whether the servers' process printed ``ready`` within the bound."""
    assert stream is not None
    deadline = time.monotonic() + _READY_S
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([stream], [], [], left)[0]:
            return False
        piece = os.read(stream.fileno(), 64)
        if not piece:
            return False
        line += piece
    return line.strip() == b"ready"
