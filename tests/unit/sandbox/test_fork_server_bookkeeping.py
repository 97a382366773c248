"""The fork server's bookkeeping of the processes it forks (``_kernels.py``):
a child reaped before it named itself is reported once it does, and nothing
else reaped is kept. Regression: a kernel that failed before naming itself,
or a process the fork server adopted, left its wait status behind, and a later
process given the same pid was reported ended as soon as it named itself (and
never killed when the runtime gave it up)."""

from __future__ import annotations

import json
import os
import socket

from lmc_runtime.sandbox import _kernels

PID = 4_000_001  # past any pid this machine hands out


def _watch(fd: int) -> None:
    """The fork server's poll registration: nothing to do here."""


def _asked(state: _kernels._Kernels, pid: int) -> tuple[int, socket.socket]:
    """As ``_fork`` leaves it: ``pid`` forked, not named yet; the child's end of
    its pipe, and the runtime's end of its connection."""
    told, tell = os.pipe()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    state.unnamed.add(pid)
    state.named_on[told] = (theirs, pid)
    return tell, ours


def _told(state: _kernels._Kernels) -> int:
    (fd,) = state.named_on
    return fd


def _report(runtime: socket.socket) -> object:
    runtime.setblocking(False)
    try:
        return json.loads(runtime.recv(4096))
    except BlockingIOError:
        return None


def test_a_child_reaped_before_it_named_itself_is_reported_once_it_does() -> None:
    state = _kernels._Kernels()
    tell, runtime = _asked(state, PID)
    _kernels._ended(state, PID, 3 << 8, _watch)
    os.write(tell, b"%d\n" % PID)
    os.close(tell)
    _kernels._named(state, _told(state), _watch)
    assert _report(runtime) == {"status": 3 << 8}
    assert not state.unnamed and not state.early and not state.by_pid


def test_a_child_that_failed_before_naming_itself_leaves_nothing_for_its_pid() -> None:
    state = _kernels._Kernels()
    tell, _ = _asked(state, PID)
    os.close(tell)  # it ended without a word (and told the runtime why)
    _kernels._named(state, _told(state), _watch)
    _kernels._ended(state, PID, 126 << 8, _watch)  # reaped after its pipe was read
    assert not state.early
    # A later child given the same pid is watched, not reported ended.
    tell, runtime = _asked(state, PID)
    os.write(tell, b"%d\n" % PID)
    os.close(tell)
    _kernels._named(state, _told(state), _watch)
    assert _report(runtime) is None
    assert PID in state.by_pid


def test_what_the_fork_server_adopted_is_not_kept() -> None:
    state = _kernels._Kernels()
    _kernels._ended(state, PID, 0, _watch)  # not forked here: a holder's orphan
    assert not state.early and not state.by_pid
