"""The output budget as a filter: one execution's console output held to its limit.

:class:`~lmc_runtime.output.OutputBudget` does the counting and the spilling;
here it is applied to a stream of messages, and declared as the
:class:`BudgetFilter` that every :class:`~lmc_runtime.computer.Computer` runs
by default.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import anyio

from . import replies
from .config import Limits
from .messages import Message
from .output import OutputBudget

if TYPE_CHECKING:
    from .filters import Run, Stream

__all__ = ["BudgetFilter", "within_budget"]


class BudgetFilter:
    """The filter that keeps each execution's console output within ``run.limits``.

    ``spill_room``, when given, is asked before each execution how many bytes
    the file of a cut output may take (None: no more than the limits say); a
    sandbox passes the room left on the session's disk.
    """

    def __init__(self, spill_room: Callable[[], int | None] | None = None) -> None:
        self.spill_room = spill_room

    def limits(self, limits: Limits) -> Limits:
        """``limits`` with the spill file capped by the room there is now."""
        room = self.spill_room() if self.spill_room is not None else None
        if room is None:
            return limits
        spill = limits.spill_bytes
        return replace(limits, spill_bytes=room if spill is None else min(spill, room))

    def __call__(self, run: Run, stream: Stream, /) -> Stream:
        return within_budget(stream, self.limits(run.limits), run.reply_to)


async def within_budget(
    stream: AsyncIterator[Message], limits: Limits, reply_to: str
) -> AsyncGenerator[Message, None]:
    """``stream`` with its console output held to ``limits.output_bytes``.

    Withheld output goes out before any display, so order is kept; runtime
    notes (``extras.status``) are never cut. A cut output's marker and tail come
    just before the final ``active_line`` null. Closing this generator closes
    ``stream`` (which stops the code).
    """
    budget = OutputBudget(limits.output_bytes, limits.spill_dir, reply_to, limits.spill_bytes)
    try:
        async for message in stream:
            if message.type == "console" and message.format == "output":
                if message.extras and "status" in message.extras:
                    for out in _release(budget, reply_to):
                        yield out
                    budget = OutputBudget(
                        limits.output_bytes, limits.spill_dir, reply_to, limits.spill_bytes
                    )
                    yield message
                    continue
                text = budget.feed(message.content, message.extras)
                if not text:
                    continue
                if text is not message.content:
                    message = message.model_copy(update={"content": text})
            elif message.type == "console" and message.content is None:
                for out in _release(budget, reply_to):
                    yield out
            elif message.type != "console":
                for text, extras in budget.flush():
                    yield replies.output(text, reply_to, **(extras or {}))
            yield message
    finally:
        budget.finish()
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()


def _release(budget: OutputBudget, reply_to: str) -> list[Message]:
    """Everything ``budget`` still holds, as messages: withheld parts, or marker and tail."""
    cut = budget.finish()
    if cut is None:
        return []
    out = []
    for index, (text, extras) in enumerate(cut.parts):
        if index == 0 and cut.cut:
            saved = {"output_path": str(cut.path)} if cut.path is not None else {}
            out.append(
                replies.output(
                    text,
                    reply_to,
                    status=replies.Status.TRUNCATED,
                    omitted_bytes=cut.omitted,
                    total_bytes=cut.total,
                    **saved,
                )
            )
        else:
            out.append(replies.output(text, reply_to, **(extras or {})))
    return out
