"""One execution in a service session: its hold on the session (:class:`Claim`),
and its replies, streamed to the client and recorded in the session's transcript
(:func:`recorded_run`, which :meth:`ServiceSession.stream
<lmc_runtime.service.session.ServiceSession.stream>` runs).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

import anyio

from .. import replies
from ..messages import Message
from .write_ahead import RunRecord

if TYPE_CHECKING:
    from .session import ServiceSession

__all__ = ["Claim", "recorded_run"]


class Claim:
    """One execution's hold on a session; releasing it twice is harmless."""

    def __init__(self, session: ServiceSession) -> None:
        self._session: ServiceSession | None = session

    def release(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session._release()


async def recorded_run(
    session: ServiceSession, message: Message, timeout: float | None, claim: Claim
) -> AsyncGenerator[Message, None]:
    """Run ``message`` in ``session`` under ``claim``; yield and record its replies.

    The run is written ahead (:mod:`.write_ahead`): its code message before it
    runs, its replies as they come, all of it before its final message is
    yielded (a run that ends otherwise, as it ends): a client that has the final
    message finds the run in the transcript, and a server killed while the code
    runs leaves that code in it. If the store fails, a notice before the final
    message says the run is held. Code in a language the session was not created
    with gets one not-understood reply naming the session's languages, recorded
    with it. A run whose client left before its end is recorded with a final
    message of its own (``client_left``)."""
    transcripts = session.transcripts
    record: RunRecord | None = None
    try:
        computer = session.computer
        if computer is None:
            notice = replies.notice("the session has ended", "closed", message.id)
            await transcripts.append(session.id, [notice])
            yield notice
            return
        language = computer.registry.resolve(message.format or "")
        if language is None or language not in session.languages:
            refusal = _not_its_language(message, session.languages)
            await transcripts.append(session.id, [message, refusal])
            if (held := transcripts.notice(session.id, message.id)) is not None:
                yield held
            yield refusal
            return
        record = RunRecord(transcripts, session.id, message)
        await record.begin()
        started = time.monotonic()
        # Closed here, not by the garbage collector: a client that goes away
        # stops its code before the session takes the next execution.
        truncated = False
        async with contextlib.aclosing(computer.arun(message, timeout=timeout)) as outs:
            async for out in outs:
                truncated = truncated or out.status == replies.Status.TRUNCATED
                if out.is_final:
                    # Recorded before the client sees the end of the execution.
                    await record.end(out)
                    _count(session, language, out, time.monotonic() - started, truncated)
                    # Not written yet: the client is told before the end.
                    if (held := transcripts.notice(session.id, message.id)) is not None:
                        yield held
                else:
                    record.add(out)
                yield out
    finally:
        claim.release()
        if record is not None and not record.ended:  # the client left before the end
            with anyio.CancelScope(shield=True):
                await record.end(_left(message))


def _left(message: Message) -> Message:
    """The final message a run's record gets when its client left before the end
    (its code was interrupted then): a transcript never holds a run without one."""
    return replies.active_line(
        None, message.id, status=replies.Status.INTERRUPTED, client_left=True
    )


def _count(
    session: ServiceSession, language: str, final: Message, seconds: float, truncated: bool
) -> None:
    if session.metrics is not None:
        session.metrics.execution_finished(
            language,
            final.status,
            seconds,
            limits=(final.extras or {}).get("limits", ()),
            truncated=truncated,
        )


def _not_its_language(message: Message, languages: list[str]) -> Message:
    names = ", ".join(languages)
    return replies.not_understood(
        f"{message.format!r} is not a language of this session, which runs {names} "
        "(a session's languages are chosen when it is created)",
        message.id,
        languages=list(languages),
    )
