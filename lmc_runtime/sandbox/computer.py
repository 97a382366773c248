"""A sandbox's Computer: a plain Computer whose filters check the sandbox's limits.

:func:`sandbox_computer` declares the pipeline: the output budget, its spill
files capped by the room left on the session's disk, then the
:class:`GuardFilter`, which turns what the :class:`Guard` saw into statuses.
"""

from __future__ import annotations

import contextlib
import errno
import logging
from collections.abc import Sequence
from typing import Any

from .. import replies
from ..budget import BudgetFilter
from ..computer import Computer
from ..errors import LMCError
from ..filters import Filter, Run, Stream
from ..messages import Message
from .guard import Guard, Violation

logger = logging.getLogger(__name__)

__all__ = ["GuardFilter", "SandboxComputer", "sandbox_computer"]


class GuardFilter:
    """The per-execution limits of a :class:`Guard`, as a filter.

    While code runs, its CPU time is watched; when it is done, each limit it ran
    into is reported as a ``[lmc]`` notice whose ``extras.status`` names it
    (``memory_limit``, ``cpu_limit``, ``process_limit``, ``disk_limit``,
    ``file_size_limit``), and the final ``active_line`` carries the first of
    them as its status (the backend's own status stays in ``ended``, all of
    them in ``limits``).

    A limit that leaves processes behind (``process_limit``) stops every
    interpreter, has the guard kill what is left, and starts them again: the
    state is lost (``state_lost``). After any other limit that ended the run
    (and a timeout), what the code started and left running is killed; the
    interpreters keep running, with their state.

    A run the host cannot even start for want of room on the session's disk
    (the code used every inode) ends as ``disk_limit``, not as an internal error.

    An interpreter's death that a limit explains (the out-of-memory killer) is
    told by the limit's notice alone: the backend's own notice of the death,
    with the interpreter's last words, is left out.
    """

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    async def __call__(self, run: Run, stream: Stream, /) -> Stream:
        guard = self.guard
        try:
            # Started before the count of the session's processes, so that its
            # sandbox is known and what the code starts in it is told apart.
            await guard.make_room()
            await run.computer.astart(run.language)
        except LMCError:
            logger.debug(
                "the %s interpreter did not start before its run", run.language, exc_info=True
            )
        except OSError as exc:
            if _errno(exc) not in (errno.ENOSPC, errno.EDQUOT):
                raise
            for out in _no_room(run):
                yield out
            return
        probe = await guard.begin()
        guard.watch_cpu(run.task_group, probe, run.computer.ainterrupt)
        final: Message | None = None
        deaths: list[Message] = []
        try:
            # Closed before the limits are looked at: that ends the execution,
            # and a restart must not wait for it.
            async with contextlib.aclosing(stream) as outs:
                async for out in outs:
                    if out.is_final:
                        final = out
                        break
                    probe.observe(out)
                    if _is_death_notice(out):
                        deaths.append(out)  # said only if no limit explains it
                        continue
                    yield out
        except OSError as exc:
            if _errno(exc) not in (errno.ENOSPC, errno.EDQUOT):
                raise
            await guard.end_strays(probe)
            for out in _no_room(run):
                yield out
            return
        finally:
            guard.unwatch_cpu(probe)
        if final is None:
            for out in deaths:
                yield out
            return
        violations = await guard.finish(probe)
        restart = any(v.restart for v in violations)
        if restart:
            # Stopping an interpreter ends its sandbox and every process in it;
            # the guard's reaper then ends what escaped, so nothing a fork bomb
            # started survives.
            await run.computer.arestart_all(cleanup=guard.kill_leftovers)
        elif _ended_by_limit(violations, final):
            await guard.end_strays(probe)
        if not violations:
            for out in deaths:
                yield out
            yield final
            return
        for violation in violations:
            yield replies.notice(violation.text, violation.status, final.in_reply_to)
        extras = dict(final.extras or {})
        extras["ended"] = extras.get("status")
        extras["status"] = str(violations[0].status)
        extras["limits"] = [str(v.status) for v in violations]
        if restart:
            extras["state_lost"] = True
        yield final.model_copy(update={"extras": extras})


#: Limits that end an execution (a file too large only fails the write).
_ENDING = frozenset(
    {
        replies.Status.PROCESS_LIMIT,
        replies.Status.MEMORY_LIMIT,
        replies.Status.CPU_LIMIT,
        replies.Status.DISK_LIMIT,
    }
)

_NO_ROOM = (
    "The session's disk is full: there is no room left for the files this run "
    "needs. Delete files to make room."
)


def _no_room(run: Run) -> list[Message]:
    """The end of a run the host could not make: its disk has no room left."""
    logger.info("a %s run could not be made: its disk is full", run.language)
    return [
        replies.notice(_NO_ROOM, replies.Status.DISK_LIMIT, run.reply_to),
        replies.active_line(None, run.reply_to, status=replies.Status.DISK_LIMIT),
    ]


def _errno(exc: OSError) -> object:
    """``exc``'s errno, also when it was raised as ``OSError(28)``."""
    return exc.errno if exc.errno is not None else (exc.args or (None,))[0]


def _ended_by_limit(violations: list[Violation], final: Message) -> bool:
    """Whether a limit (or the timeout) ended the execution that ``final`` ends."""
    status = (final.extras or {}).get("status")
    return status == replies.Status.TIMEOUT or any(v.status in _ENDING for v in violations)


def _is_death_notice(message: Message) -> bool:
    """Whether ``message`` is the notice of an interpreter that died. It carries
    the interpreter's last words (a kernel's start-up banner, host paths), which
    a limit's own notice replaces."""
    extras = message.extras or {}
    return message.format == "output" and extras.get("status") == replies.Status.KERNEL_DIED


def sandbox_computer(guard: Guard, *, filters: Sequence[Filter] = (), **kwargs: Any) -> Computer:
    """A :class:`Computer` that checks ``guard``'s limits around every execution.

    Its filters are the output budget, whose spill files never take more than
    half the room left on the session's disk, then the :class:`GuardFilter`,
    then ``filters``. Other keyword arguments go to :class:`Computer`.
    """
    declared: list[Filter] = [BudgetFilter(spill_room=guard.spill_room), GuardFilter(guard)]
    declared.extend(filters)
    return Computer(filters=declared, **kwargs)


#: The name this factory had when it was a subclass of Computer.
SandboxComputer = sandbox_computer
