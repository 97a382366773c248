"""A Computer that checks its sandbox's limits around every execution."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Any

import anyio

from .. import replies
from ..computer import Computer, MessageInput
from ..config import Limits
from ..errors import LMCError
from ..messages import Message
from .guard import Guard

logger = logging.getLogger(__name__)

__all__ = ["SandboxComputer"]


class SandboxComputer(Computer):
    """:class:`Computer` plus the per-execution limits of its :class:`Guard`.

    While code runs, its CPU time is watched; when it is done, each limit it ran
    into is reported as a ``[lmc]`` notice whose ``extras.status`` names it
    (``memory_limit``, ``cpu_limit``, ``process_limit``, ``disk_limit``,
    ``file_size_limit``), and the final ``active_line`` carries the first of
    them as its status (the backend's own status stays in ``ended``).

    A limit that leaves processes behind (``process_limit``) stops every
    interpreter, has the guard kill what is left, and starts them again: the
    state is lost (``state_lost``). Spill files of truncated outputs never take
    more than half the room left on the session's disk.
    """

    def __init__(self, guard: Guard, **kwargs: Any) -> None:
        self.guard = guard
        self._limits = Limits()
        super().__init__(**kwargs)

    @property
    def limits(self) -> Limits:
        """The output limits, the spill file capped by the room left on the disk."""
        room = self.guard.spill_room()
        if room is None:
            return self._limits
        spill = self._limits.spill_bytes
        return replace(self._limits, spill_bytes=room if spill is None else min(spill, room))

    @limits.setter
    def limits(self, value: Limits) -> None:
        self._limits = value

    async def arun(
        self, message: MessageInput, code: str | None = None, *, timeout: float | None = None
    ) -> AsyncGenerator[Message, None]:
        probe = await self.guard.begin()
        watcher = anyio.CancelScope()

        async def watch() -> None:
            with watcher:
                await self.guard.watch_cpu(probe, self.ainterrupt)

        if self._task_group is not None:
            self._task_group.start_soon(watch)
        final: Message | None = None
        try:
            async with contextlib.aclosing(super().arun(message, code, timeout=timeout)) as outs:
                async for out in outs:
                    if (
                        out.type == "console"
                        and out.format == "active_line"
                        and out.content is None
                    ):
                        final = out
                        break
                    probe.observe(out)
                    yield out
        finally:
            watcher.cancel()
        if final is None:
            return
        violations = await self.guard.finish(probe)
        if not violations:
            yield final
            return
        restart = any(v.restart for v in violations)
        if restart:
            await self._start_over()
        for violation in violations:
            yield replies.notice(violation.text, violation.status, final.in_reply_to)
        extras = dict(final.extras or {})
        extras["ended"] = extras.get("status")
        extras["status"] = violations[0].status
        extras["limits"] = [v.status for v in violations]
        if restart:
            extras["state_lost"] = True
        yield final.model_copy(update={"extras": extras})

    async def _start_over(self) -> None:
        """Stop every interpreter, kill whatever the code left, start them again.

        Stopping an interpreter ends its sandbox and every process in it; the
        guard's reaper then ends what escaped (outside a sandbox, or past a
        restart), so nothing a fork bomb started survives.
        """
        running = [name for name in self.registry if name in self._sessions]
        await self._sessions.close()
        await self.guard.kill_leftovers()
        for name in running:
            try:
                await self._sessions.get(name)
            except LMCError:
                logger.warning("starting the %s session again failed", name, exc_info=True)
