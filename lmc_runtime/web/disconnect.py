"""A streamed answer's watch of its client: the answer's work is cancelled once
the client disconnects, even while it has nothing to send (a run that prints
nothing, a watch with no event).

The watch is a task that waits for the client's next message; it starts only
once the answer has taken :data:`WATCH_AFTER` seconds. A quick answer (a warm
run is 4 ms) so costs no task, nor the cancellation of one: some eight of the
event loop's callbacks, a quarter of what an ``execute`` request made it do. A
client that leaves sooner is found out that much later, at most.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import anyio
from starlette.types import Receive

__all__ = ["WATCH_AFTER", "cancel_on_disconnect", "stream_while_connected"]

logger = logging.getLogger(__name__)

#: How long (seconds) an answer runs before its client is watched.
WATCH_AFTER = 0.05


async def cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` once the client has disconnected (run beside the answer,
    in a task of ``scope``: what the client sends after its request is passed over)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def stream_while_connected(
    receive: Receive, answer: Callable[[], Awaitable[object]], source: AsyncGenerator[Any, None]
) -> bool:
    """Run ``answer`` (it sends what ``source`` makes) until it returns or the
    client disconnects, then close ``source`` (shielded: its ``finally`` runs
    however this ends). True if the client left first; a connection that broke
    under the answer (OSError) is a client that left."""
    left = watching = False
    try:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                nonlocal left
                await cancel_on_disconnect(receive, tg.cancel_scope)
                left = True

            def start_watching() -> None:
                nonlocal watching
                try:
                    _name_the_loop()
                    tg.start_soon(watch)
                except Exception:  # the client goes unwatched: said, not swallowed by asyncio
                    logger.exception("the watch of a streamed answer's client did not start")
                else:
                    watching = True

            # The runtime's loop is asyncio's (its ZMQ sockets are): a timer
            # costs no task, where a task that sleeps would.
            timer = asyncio.get_running_loop().call_later(WATCH_AFTER, start_watching)
            try:
                await answer()
            finally:
                timer.cancel()
            if watching:
                tg.cancel_scope.cancel()
    except OSError as exc:
        logger.debug("a client went away during a streamed answer: %s", exc)
        left = True
    finally:
        with anyio.CancelScope(shield=True):
            await source.aclose()
    return left


def _name_the_loop() -> None:
    """Tell anyio, in an event-loop callback, which loop runs: it asks sniffio
    (when that is installed), which looks for the current task, and a callback
    has none. Set in the callback's own copy of the context (asyncio runs each
    callback in one), and only once the watch is due, not on every request."""
    try:
        import sniffio
    except ImportError:  # anyio then asks asyncio itself
        return
    sniffio.current_async_library_cvar.set("asyncio")
