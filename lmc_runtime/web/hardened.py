"""The one hardened set-up of every HTTP door (``lmc serve``, ``lmc mcp --http``).

:func:`hardened_config` lifts the open-file limit towards its hard limit,
then gives uvicorn the deadlines and the cap of :mod:`.connections` (through
the guarded protocols of :mod:`.guarded`), a backlog well within the cap, and
an idle connection kept no longer than its next headers may take;
:class:`HardenedServer`, while it serves, logs a failed ``accept()`` (no
descriptor left: EMFILE, ENFILE, ENOBUFS, ENOMEM) at most once every
:data:`ACCEPT_LOG_EVERY` seconds, in one line with the count since, instead
of a traceback each time. Accepting backs off meanwhile: asyncio stops
watching the listening socket for a second after such a failure (Python 3.11
still tries the rest of its accept batch first, each try reported: the batch
is :func:`backlog`, a quarter of the cap, not uvicorn's 2,048).
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
from typing import Any

import uvicorn

from .connections import ConnectionLimits, connection_cap, raise_file_limit
from .guarded import guarded_protocol

__all__ = ["ACCEPT_LOG_EVERY", "AcceptErrors", "HardenedServer", "backlog", "hardened_config"]

logger = logging.getLogger(__name__)

#: A failed ``accept()`` is logged at most once in this many seconds.
ACCEPT_LOG_EVERY = 10.0

#: What asyncio's loop says when ``accept()`` finds no descriptor or memory left.
_ACCEPT_FAILED = "socket.accept() out of system resource"


def backlog(limits: ConnectionLimits) -> int:
    """asyncio accepts up to this many connections at once, before any can be
    closed to make room: kept well below the cap, a burst cannot use up the
    file descriptors that the cap leaves free."""
    return max(16, connection_cap(limits) // 4)


def hardened_config(app: Any, limits: ConnectionLimits, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration of ``app`` behind ``limits``, once the open-file
    limit is raised; ``options``: the door's own (its lifespan, logging...)."""
    raise_file_limit()
    return uvicorn.Config(
        app,
        http=guarded_protocol(limits),
        backlog=backlog(limits),
        # An idle connection stays open as long as its next headers may take:
        # past the 5 s after which httpx drops one, so a client never reuses a
        # connection just as it is closed.
        timeout_keep_alive=math.ceil(limits.header_timeout),
        server_header=False,
        **options,
    )


class AcceptErrors:
    """An event loop's exception handler that logs failed accepts rarely and in
    one line; every other exception goes to the handler it replaces."""

    def __init__(self, loop: asyncio.AbstractEventLoop, every: float = ACCEPT_LOG_EVERY) -> None:
        self._previous = loop.get_exception_handler()
        self._every = every
        self._logged_at: float | None = None
        self._since = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != _ACCEPT_FAILED:
            if self._previous is not None:
                self._previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        now = loop.time()
        if self._logged_at is not None and now - self._logged_at < self._every:
            self._since += 1
            return
        sock = context.get("socket")  # asyncio's TransportSocket
        name = getattr(sock, "getsockname", None)
        where = name() if callable(name) else "?"
        more = f" ({self._since} more since the last report)" if self._since else ""
        logger.error(
            "cannot accept connections on %s: %s; retrying in a second%s",
            where,
            context.get("exception"),
            more,
        )
        self._logged_at, self._since = now, 0


class HardenedServer(uvicorn.Server):
    """uvicorn's server, with failed accepts logged rarely (see the module)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(AcceptErrors(loop))
        await super().startup(sockets)
