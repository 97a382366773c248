"""The output budget as a filter: what one execution sends back held to its limit.

:class:`~lmc_runtime.budget.output.OutputBudget` does the counting and the spilling;
here it is applied to a stream of messages, and declared as the
:class:`BudgetFilter` that every :class:`~lmc_runtime.computer.Computer` runs
by default.

Every message is charged: its content's bytes (an image's base64, an HTML
page's text, a display's extras, the bundle a text display keeps) plus
:data:`MESSAGE_OVERHEAD`. Console text
past the budget is cut to its head and tail; a display that no longer fits is
not sent, nor any display after it, and one notice says how many were left
out. The ``active_line`` numbers (a few a second at most) are not charged.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import anyio

from .. import replies
from ..config import Limits
from ..messages import Message
from .output import OutputBudget
from .tail import size

if TYPE_CHECKING:
    from ..filters import Run, Stream

__all__ = ["MESSAGE_OVERHEAD", "BudgetFilter", "within_budget"]

#: What each message costs beyond its content: about what its envelope (ids,
#: time, type) takes once serialized, so that floods of tiny messages count.
MESSAGE_OVERHEAD = 64
#: Runtime notes still sent past the budget (the last ones: a run's ending).
NOTES_KEPT = 8


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
    """``stream`` with what it sends back held to ``limits.output_bytes``.

    Withheld output goes out before any display, so order is kept. Runtime
    notes (``extras.status``) are charged but never cut; past the budget the
    last :data:`NOTES_KEPT` of them are held and sent with the cut output's
    notices, just before the final ``active_line`` null. Closing this
    generator closes ``stream`` (which stops the code).
    """
    budget = OutputBudget(
        limits.output_bytes,
        limits.spill_dir,
        reply_to,
        limits.spill_bytes,
        overhead=MESSAGE_OVERHEAD,
        route=limits.spill_route,
    )
    left_out = LeftOut(limits.output_bytes, reply_to)
    try:
        async for message in stream:
            if message.type == "console" and message.format == "output":
                if message.extras and "status" in message.extras:
                    for out in _note(budget, left_out, message):
                        yield out
                    continue
                message = _charged_bundle(budget, message)
                text = budget.feed(message.content, message.extras)
                if not text:
                    continue
                if text is not message.content:
                    message = message.model_copy(update={"content": text})
            elif message.type == "console" and message.content is None:
                for out in _release(budget, left_out):
                    yield out
            elif message.type != "console":
                if left_out.any or not budget.take(display_cost(message)):
                    left_out.display(message)
                    continue
                for text, extras in budget.flush():
                    yield replies.output(text, reply_to, **(extras or {}))
            yield message
    finally:
        budget.finish()
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()


def _charged_bundle(budget: OutputBudget, message: Message) -> Message:
    """A text display's bundle (``extras.display.data``, see
    :func:`~lmc_runtime.backends.jupyter.translate.mark_display`) charged, or left
    out of the message when it does not fit."""
    display = (message.extras or {}).get("display")
    if not isinstance(display, dict) or not display.get("data"):
        return message
    if budget.take(len(json.dumps(display["data"], default=str))):
        return message
    kept = {k: v for k, v in display.items() if k != "data"}
    return message.model_copy(update={"extras": {**(message.extras or {}), "display": kept}})


def _note(budget: OutputBudget, left_out: LeftOut, note: Message) -> list[Message]:
    """A runtime note: sent after what is withheld, or held once past the budget."""
    if left_out.any or not budget.take(size(note.content)):
        left_out.note(note)
        return []
    parts = budget.flush()
    return [*(replies.output(t, left_out.reply_to, **(e or {})) for t, e in parts), note]


def _release(budget: OutputBudget, left_out: LeftOut) -> list[Message]:
    """Everything still held, as messages: withheld parts, or marker and tail;
    then the notice of what was left out, and the notes held past the budget."""
    reply_to = left_out.reply_to
    cut = budget.finish()
    out = []
    for index, (text, extras) in enumerate(cut.parts if cut is not None else ()):
        if index == 0 and cut is not None and cut.cut:
            saved = {"output_path": cut.where} if cut.where is not None else {}
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
    return out + left_out.notices()


def display_cost(message: Message) -> int:
    """What a display takes from the budget before its overhead: its content
    (an image's base64, an HTML page's text) and its extras, in bytes."""
    content = message.content
    cost = size(content) if isinstance(content, str) else len(json.dumps(content, default=str))
    if message.extras:
        cost += len(json.dumps(message.extras, default=str))
    return cost


class LeftOut:
    """What one execution sent past its budget and was not passed on."""

    def __init__(self, limit: int, reply_to: str) -> None:
        self.limit = limit
        self.reply_to = reply_to
        self.displays = 0
        self.notes_dropped = 0
        self.bytes = 0
        self.notes: deque[Message] = deque(maxlen=NOTES_KEPT)

    @property
    def any(self) -> bool:
        """Something went past the budget: nothing else that cannot be cut goes on."""
        return bool(self.displays or self.notes)

    def display(self, message: Message) -> None:
        self.displays += 1
        self.bytes += display_cost(message)

    def note(self, message: Message) -> None:
        if len(self.notes) == self.notes.maxlen:
            dropped = self.notes.popleft()
            self.notes_dropped += 1
            self.bytes += size(dropped.content)
        self.notes.append(message)

    def notices(self) -> list[Message]:
        """One notice of what was left out (if anything was), then the notes kept;
        afterwards nothing is held."""
        out = []
        if self.displays or self.notes_dropped:
            what = [
                f"{n} {noun}{'s' if n != 1 else ''}"
                for n, noun in ((self.displays, "display"), (self.notes_dropped, "runtime note"))
                if n
            ]
            out.append(
                replies.notice(
                    f"{' and '.join(what)} ({self.bytes} bytes) not shown: "
                    f"past the output budget of {self.limit} bytes",
                    replies.Status.TRUNCATED,
                    self.reply_to,
                    omitted_bytes=self.bytes,
                    omitted_displays=self.displays,
                    omitted_notes=self.notes_dropped,
                )
            )
        out.extend(self.notes)
        self.notes.clear()
        self.displays = self.notes_dropped = self.bytes = 0
        return out
