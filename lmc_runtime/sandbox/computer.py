"""A Computer that checks its sandbox's limits around every execution."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any

import anyio

from .. import replies
from ..computer import Computer, MessageInput
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
    """

    def __init__(self, guard: Guard, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.guard = guard

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
            await self._restart_all()
        for violation in violations:
            yield replies.notice(violation.text, violation.status, final.in_reply_to)
        extras = dict(final.extras or {})
        extras["ended"] = extras.get("status")
        extras["status"] = violations[0].status
        extras["limits"] = [v.status for v in violations]
        if restart:
            extras["state_lost"] = True
        yield final.model_copy(update={"extras": extras})

    async def _restart_all(self) -> None:
        """Restart every running session: that ends every process the code left."""
        for name in self.registry:
            try:
                await self.arestart(name)
            except LMCError:
                logger.warning("restarting the %s session failed", name, exc_info=True)
