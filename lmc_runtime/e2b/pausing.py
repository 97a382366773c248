"""Pausing an E2B sandbox: every process of its session is stopped where it
stands (memory, open files and kernels' state kept) and let go on when it is
resumed.

The session's cgroup is frozen where it has one (the freezer of cgroup v1, or
``cgroup.freeze`` of v2). Without a cgroup, each process of the session gets
SIGSTOP, a few rounds until no new one appears (one forking while it is being
stopped), and SIGCONT on resume, only if it is still the process that was
stopped (its start time is checked). While it is paused, the session is held
as if it ran code, so the lmc API's runs in it are refused as busy (409)
instead of waiting on stopped interpreters. A paused sandbox lives in this
server's memory: it does not survive a restart of the server.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from dataclasses import dataclass, field

from ..errors import LMCError
from ..sandbox.cgroups import Cgroup
from ..sandbox.strays import Census, TreeCensus, UserCensus, proc_table
from ..service.execution import Claim
from ..service.session import ServiceSession
from .errors import E2BError

__all__ = ["Frozen", "freeze", "hold", "thaw"]

logger = logging.getLogger(__name__)

#: How many rounds of SIGSTOP at the most (each stops those that appeared since).
_ROUNDS = 8


@dataclass
class Frozen:
    """How a paused session was stopped, to let it go on the same way."""

    cgroup: Cgroup | None = None
    #: ``(pid, start time)`` of each process that got SIGSTOP.
    stopped: set[tuple[int, int]] = field(default_factory=set)
    #: The session held while it is paused (None: it was running code then).
    claim: Claim | None = None


def hold(session: ServiceSession) -> Claim | None:
    """Hold ``session`` as a run does (on the event loop), or None if it is busy."""
    try:
        return session.acquire()
    except LMCError:  # busy running code, or ended
        return None


def _cgroup_of(session: ServiceSession) -> Cgroup | None:
    # The sandbox keeps its cgroup to itself; its freezer is what a pause needs.
    cgroup = getattr(session.sandbox, "_cgroup", None)
    return cgroup if isinstance(cgroup, Cgroup) else None


def _census_of(session: ServiceSession) -> Census:
    sandbox = session.sandbox
    identity = sandbox.identity
    if identity is not None:
        return UserCensus(identity.uid)
    return TreeCensus(sandbox.root)


def freeze(session: ServiceSession) -> Frozen:
    """Stop every process of ``session`` (blocking: run it in a worker thread)."""
    cgroup = _cgroup_of(session)
    if cgroup is not None and cgroup.freeze(True):
        return Frozen(cgroup=cgroup)
    census = _census_of(session)
    frozen = Frozen()
    for _ in range(_ROUNDS):
        members = census.members()
        fresh = {(pid, start) for pid, (_, start) in members.items()} - frozen.stopped
        if not fresh:
            return frozen
        for pid, start in fresh:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
            frozen.stopped.add((pid, start))
    thaw(frozen)
    raise E2BError("the sandbox's processes kept forking while it was being paused", 409)


def thaw(frozen: Frozen) -> None:
    """Let the processes ``frozen`` stopped go on, and the session be used (on the
    event loop: it is cheap)."""
    claim, frozen.claim = frozen.claim, None
    if claim is not None:
        claim.release()
    if frozen.cgroup is not None:
        if not frozen.cgroup.freeze(False):
            logger.warning("a paused sandbox's cgroup could not be thawed")
        return
    pids = [pid for pid, _ in frozen.stopped]
    alive = proc_table(pids)
    for pid, start in frozen.stopped:
        if pid in alive and alive[pid][1] == start:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
