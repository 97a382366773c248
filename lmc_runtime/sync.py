"""The sync layer's iterator: an async message stream pulled through a blocking portal.

Each message is one task in the portal's event loop, so a caller that stops
reading, or is interrupted by a signal in its own thread, never leaves the
stream half-run: the pending step is cancelled in the loop (which stops the
code) and the stream is closed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import AsyncGenerator, Iterator

from anyio.from_thread import BlockingPortal

from . import replies
from .messages import Message

__all__ = ["iterate_in_portal"]


def iterate_in_portal(
    portal: BlockingPortal, stream: AsyncGenerator[Message, None], *, cancel_wait: float
) -> Iterator[Message]:
    """Yield ``stream``'s messages in this thread until its final ``active_line`` null.

    ``cancel_wait`` bounds how long an interrupted caller waits for the
    cancelled step to wind down before the interruption propagates.
    """
    reply_to: str | None = None
    try:
        while True:
            try:
                step = portal.start_task_soon(stream.__anext__)
            except RuntimeError:  # the Computer was closed between two messages
                if reply_to is not None:
                    yield replies.notice(
                        "The Computer was closed while this code ran; its state is gone.",
                        replies.Status.CLOSED,
                        reply_to,
                        state_lost=True,
                    )
                    yield replies.active_line(
                        None, reply_to, status=replies.Status.CLOSED, state_lost=True
                    )
                return
            try:
                message = step.result()
            except StopAsyncIteration:
                return
            except BaseException:
                # Ctrl-C or a signal in this thread: cancel the step in the event
                # loop too (which stops the code), or it would hold the session.
                step.cancel()
                concurrent.futures.wait([step], timeout=cancel_wait)
                raise
            reply_to = message.in_reply_to
            yield message
            if message.is_final:
                return
    finally:
        with contextlib.suppress(Exception):
            portal.call(stream.aclose)
