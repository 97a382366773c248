"""The filters one execution's messages pass through, as a Computer declares them.

A filter takes the stream of one execution and returns the stream that goes
on: it may change messages, hold some back, add its own, and act once the
final ``active_line`` null has gone by (or instead of letting it go by). A
:class:`~lmc_runtime.computer.Computer` applies its ``filters`` in order: the
first sees the session's own messages, each next one what the previous one let
through, and the caller gets what the last one yields.

A filter is any callable ``filter(run, stream)`` that returns an async
generator, an ``async def`` generator function most simply::

    async def upper(run: Run, stream: Stream) -> Stream:
        async for message in stream:
            if message.type == "console" and message.format == "output":
                message = message.model_copy(update={"content": message.content.upper()})
            yield message

Rules every filter keeps:

- it yields exactly one final message (``Message.is_final``), last, unless
  the stream it reads ends without one (the caller stopped, or nothing ran);
- it closes ``stream`` as soon as it stops reading it (``contextlib.aclosing``),
  since closing the stream is what stops the code; the Computer closes every
  stage again when the run is over, so a filter that forgets still lets go;
- it starts no task group of its own across a ``yield``: a watcher that runs
  beside the code goes in ``run.task_group``, and is cancelled by the filter.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio
from anyio.abc import TaskGroup

from . import replies
from .backends.base import ExecutionOptions
from .config import Limits
from .messages import Message
from .replies import Status

__all__ = ["Filter", "FilterHost", "Run", "Stream", "filtered"]

logger = logging.getLogger(__name__)

#: One execution's messages, as a filter reads and returns them.
Stream = AsyncGenerator[Message, None]


@runtime_checkable
class FilterHost(Protocol):
    """What a filter may ask of the Computer that runs its execution."""

    async def astart(self, language: str) -> None:
        """Start ``language``'s interpreter if it is not running, and wait until it answers."""
        ...

    async def ainterrupt(self, language: str | None = None) -> None:
        """Interrupt the running code (in ``language`` only, if given)."""
        ...

    async def arestart_all(self, cleanup: Callable[[], Awaitable[None]] | None = None) -> None:
        """Stop every running interpreter, await ``cleanup``, start them again."""
        ...


@dataclass(frozen=True)
class Run:
    """One execution, as its filters see it.

    ``computer`` is the host that runs it, to start its interpreter, interrupt
    it, or start every interpreter over (a :class:`FilterHost`, the Computer's
    three methods a filter may call); ``task_group`` is that Computer's, for
    watchers that live as long as the run (the filter cancels them when it is
    done).
    """

    language: str
    code: str
    reply_to: str
    options: ExecutionOptions
    limits: Limits
    computer: FilterHost
    task_group: TaskGroup


class Filter(Protocol):
    """Turns one execution's stream into the stream that goes on."""

    def __call__(self, run: Run, stream: Stream, /) -> Stream: ...


async def filtered(filters: Sequence[Filter], run: Run, source: Stream) -> Stream:
    """``source`` through every filter in order.

    A filter that fails is logged, and the run ends as a backend error if it had
    not ended yet. When this generator is closed, every stage is closed, the
    outermost first, so that each filter can still finish what it began before
    the code's own stream is closed under it.
    """
    stages = [source]
    for apply in filters:
        stages.append(apply(run, stages[-1]))
    ended = False
    try:
        async for message in stages[-1]:
            ended = ended or message.is_final
            yield message
    except Exception as exc:
        logger.exception("internal error in the filters of a %s run", run.language)
        if not ended:
            yield replies.notice(
                f"internal error in lmc-runtime: {exc!r}", Status.BACKEND_ERROR, run.reply_to
            )
            yield replies.active_line(None, run.reply_to, status=Status.BACKEND_ERROR)
    finally:
        with anyio.CancelScope(shield=True):
            for stage in reversed(stages):
                try:
                    await stage.aclose()
                except Exception:
                    logger.warning("closing a stage of the run's filters failed", exc_info=True)
