"""Every message of a session, appended to its thread in the thread store."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import anyio

from ..messages import Message
from ..store import ThreadStore

__all__ = ["Transcripts"]

logger = logging.getLogger(__name__)


class Transcripts:
    """Writes sessions' transcripts through a (sync, thread-safe) :class:`ThreadStore`.

    A failing store is logged and never breaks an execution.
    """

    def __init__(self, store: ThreadStore) -> None:
        self._store = store

    async def open(self, session_id: str, *, title: str, metadata: Mapping[str, Any]) -> None:
        """Create the thread of ``session_id``."""
        try:
            await anyio.to_thread.run_sync(
                lambda: self._store.create(session_id, title=title, metadata=metadata)
            )
        except Exception:
            logger.exception("could not create the transcript of session %s", session_id)

    async def append(self, session_id: str, messages: Iterable[Message]) -> None:
        """Append ``messages`` to the thread of ``session_id``."""
        batch = list(messages)
        if not batch:
            return
        try:
            await anyio.to_thread.run_sync(lambda: self._store.append(session_id, batch))
        except Exception:
            logger.exception("could not append to the transcript of session %s", session_id)

    async def aclose(self) -> None:
        """Close the store."""
        await anyio.to_thread.run_sync(self._store.close)
