"""A streamed answer's watch of its client: the answer's work is cancelled the
moment the client disconnects, even while it has nothing to send (a run that
prints nothing, a watch with no event)."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import anyio
from starlette.types import Receive

__all__ = ["cancel_on_disconnect", "stream_while_connected"]

logger = logging.getLogger(__name__)


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
    left = False
    try:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                nonlocal left
                await cancel_on_disconnect(receive, tg.cancel_scope)
                left = True

            tg.start_soon(watch)
            await answer()
            tg.cancel_scope.cancel()
    except OSError as exc:
        logger.debug("a client went away during a streamed answer: %s", exc)
        left = True
    finally:
        with anyio.CancelScope(shield=True):
            await source.aclose()
    return left
