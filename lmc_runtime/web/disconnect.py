"""A streamed answer's watch of its client: the answer's work is cancelled the
moment the client disconnects, even while it has nothing to send (a run that
prints nothing, a watch with no event)."""

from __future__ import annotations

import anyio
from starlette.types import Receive

__all__ = ["cancel_on_disconnect"]


async def cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` once the client has disconnected (run beside the answer,
    in a task of ``scope``: what the client sends after its request is passed over)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()
