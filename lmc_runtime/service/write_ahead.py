"""A run's record in its session's transcript, written ahead of the run.

The code message is stored when the run is accepted, before the code runs; the
output is stored as it comes, at most :data:`WRITE_BEHIND` seconds after it was
sent (outputs that come meanwhile share one append); the final message is
stored before the client sees it. So a server killed while code runs (SIGKILL,
the code that crashed it) leaves that code in the transcript, with the output
so far; when the server starts again on the same data directory,
:func:`close_lost_runs` gives each such run a final message of its own, status
``server_lost``.

The writes go through :class:`~lmc_runtime.service.transcript.Transcripts`, so
a failing store holds them in order, as it holds any other.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import anyio

from .. import replies
from ..errors import ThreadNotFound
from ..messages import Message
from ..store import ThreadStore

if TYPE_CHECKING:
    from .transcript import Transcripts

__all__ = ["WRITE_BEHIND", "RunRecord", "WriteBehind", "close_lost_runs", "unfinished_run"]

logger = logging.getLogger(__name__)

#: Output is stored at most this long (seconds) after it was sent: a run shorter
#: than that is stored in two appends, its code and then the rest with its end.
WRITE_BEHIND = 0.05


class RunRecord:
    """One run's record: :meth:`begin` before the code runs, :meth:`add` for each
    reply as it is sent, :meth:`end` with the final message."""

    def __init__(self, transcripts: Transcripts, session_id: str, code: Message) -> None:
        self.session_id = session_id
        self.code = code
        self._transcripts = transcripts
        self._pending: list[Message] = []
        self._queued = False
        # Uncontended (the usual case), taken without passing the event loop a turn:
        # two of a run's few loop iterations.
        self._lock = anyio.Lock(fast_acquire=True)
        self.ended = False

    async def begin(self) -> None:
        """Store the code message, before it runs."""
        async with self._lock:
            await self._transcripts.append(self.session_id, [self.code])

    def add(self, message: Message) -> None:
        """Keep ``message`` for the store, written behind (see :meth:`flush`)."""
        self._pending.append(message)
        if not self._queued:
            self._queued = True
            self._transcripts.behind.due(self)

    async def flush(self) -> None:
        """Store what was added so far, after whatever an earlier flush stores."""
        async with self._lock:
            if self._queued:
                self._queued = False
                self._transcripts.behind.done(self)
            batch, self._pending = self._pending, []
            if batch:
                await self._transcripts.append(self.session_id, batch)

    async def end(self, final: Message) -> None:
        """Store the rest of the run and ``final``, its last message."""
        self.ended = True
        self._pending.append(final)
        await self.flush()


class WriteBehind:
    """Flushes runs' records :data:`WRITE_BEHIND` seconds after their first
    output not yet stored: one task (:meth:`run`), asleep until the earliest of
    them is due. A run whose end stores its output first is only forgotten (its
    due time moves the task's wake-up, a cancel scope's deadline): a short run
    costs the task no wake-up (a task woken twice a run, to take the run and
    then at its due time, cost every run of ``lmc serve``)."""

    def __init__(self) -> None:
        self._due: dict[RunRecord, float] = {}
        self._sleep: anyio.CancelScope | None = None

    def due(self, record: RunRecord) -> None:
        """Flush ``record`` :data:`WRITE_BEHIND` seconds from now, unless :meth:`done` first."""
        self._due.setdefault(record, anyio.current_time() + WRITE_BEHIND)
        self._wake_at_earliest()

    def done(self, record: RunRecord) -> None:
        """``record`` stores what it holds itself: it is not due any more."""
        if self._due.pop(record, None) is not None:
            self._wake_at_earliest()

    def _wake_at_earliest(self) -> None:
        if self._sleep is not None:
            self._sleep.deadline = min(self._due.values(), default=math.inf)

    async def run(self) -> None:
        """Flush each record when it is due, until cancelled."""
        while True:
            with anyio.CancelScope(deadline=min(self._due.values(), default=math.inf)) as sleep:
                self._sleep = sleep
                await anyio.sleep_forever()
            self._sleep = None
            now = anyio.current_time()
            for record in [r for r, when in self._due.items() if when <= now]:
                await record.flush()  # which makes it done


def _ends(reply: Message, code_id: str | None) -> bool:
    """Whether ``reply`` is the last word on the run of the code ``code_id``."""
    return reply.in_reply_to == code_id and (
        reply.is_final or reply.status == replies.Status.NOT_UNDERSTOOD
    )


def unfinished_run(messages: Sequence[Message]) -> Message | None:
    """The code message of the thread's last run if nothing ended it, else None."""
    for index in range(len(messages) - 1, -1, -1):
        code = messages[index]
        if code.type == "code":
            ended = any(_ends(reply, code.id) for reply in messages[index + 1 :])
            return None if ended else code
    return None


def _lost(store: ThreadStore, session_ids: Iterable[str]) -> list[tuple[str, Message]]:
    """Each session's unfinished run, as (session id, code message) (in a thread)."""
    found = []
    for session_id in session_ids:
        try:
            code = unfinished_run(store.messages(session_id))
        except ThreadNotFound:
            continue
        if code is not None:
            found.append((session_id, code))
    return found


async def close_lost_runs(transcripts: Transcripts, session_ids: Iterable[str]) -> int:
    """Give the unfinished run of each of ``session_ids`` (sessions of a server
    that stopped without a shutdown) its final message, status ``server_lost``;
    how many there were. A store that fails is logged, never raised."""
    wanted = list(session_ids)
    if not wanted:
        return 0
    try:
        lost = await anyio.to_thread.run_sync(_lost, transcripts.store, wanted)
    except Exception as exc:
        logger.error("cannot look for runs the server did not finish: %s", exc)
        return 0
    for session_id, code in lost:
        final = replies.active_line(
            None,
            code.id,
            status=replies.Status.SERVER_LOST,
            reason="the server stopped without a shutdown while this ran",
            state_lost=True,
        )
        await transcripts.append(session_id, [final])
        logger.warning(
            "session %s: the run of code message %s never finished; recorded as server_lost",
            session_id,
            code.id,
        )
    return len(lost)
