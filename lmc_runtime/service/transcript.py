"""Every message of a session, appended to its thread in the thread store.

A store that fails (a full data directory, PostgreSQL gone) never breaks an
execution, and never loses messages silently: what could not be written is
held in memory, per session and in order, and written before that session's
next messages once the store works again, or sooner: :meth:`Transcripts.keep_trying`
tries the store again on its own, at a pace that slows while it keeps failing.
While it is held, each run's stream says so in a notice (``extras.status``
``store_unavailable``) before its final message. Held messages are bounded
(``held_bytes``); past the bound a batch is dropped, logged as an error and
counted in the notices. What is still held when the server stops is logged as
lost.

A run is written ahead (:mod:`.write_ahead`): its code message before it runs,
its output as it comes, written behind by :meth:`Transcripts.keep_trying`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from .. import replies
from ..errors import ThreadExists, ThreadNotFound
from ..messages import Message
from ..store import ThreadStore
from ..store.base import stamp
from .write_ahead import WriteBehind

__all__ = ["STORE_UNAVAILABLE", "Transcripts"]

logger = logging.getLogger(__name__)

#: The ``extras.status`` of the notice that a run's messages are held, not stored.
STORE_UNAVAILABLE = "store_unavailable"

#: After a failure, the store is tried again this long after (seconds), doubling up to the last.
_RETRY_FIRST, _RETRY_MOST = 0.5, 15.0


@dataclass
class _Held:
    """What one session's thread is still owed: its creation, its messages."""

    title: str | None = None
    metadata: Mapping[str, Any] | None = None
    created: bool = True
    messages: list[Message] = field(default_factory=list)
    size: int = 0
    dropped: int = 0
    #: Whether an append of these messages failed: it may have stored them all the
    #: same (a commit whose answer was lost), so they are looked for first.
    tried: bool = False


def _never(session_id: str, messages: list[Message]) -> bool:
    """A store's ``append_now`` when it has none: an append always waits."""
    return False


def _size(messages: Iterable[Message]) -> int:
    """A rough byte count of ``messages``, for the bound on what is held."""
    return sum(256 + len(str(m.content or "")) for m in messages)


class Transcripts:
    """Writes sessions' transcripts through a (sync, thread-safe) :class:`ThreadStore`.

    ``held_bytes`` bounds the messages held, all sessions together, while the
    store fails.
    """

    def __init__(self, store: ThreadStore, *, held_bytes: int = 64 << 20) -> None:
        self._store = store
        self._append_now: Callable[[str, list[Message]], bool] = getattr(
            store, "append_now", _never
        )
        self._held_bytes = held_bytes
        self._held: dict[str, _Held] = {}
        self._problem: str | None = None
        self._retry_at = 0.0
        self._retry_after = _RETRY_FIRST
        self._lock = anyio.Lock()
        self._holding = anyio.Event()
        #: Writes runs' output behind them (see :mod:`.write_ahead`).
        self.behind = WriteBehind()

    @property
    def store(self) -> ThreadStore:
        """The store the transcripts go to."""
        return self._store

    @property
    def held(self) -> int:
        """How many messages are waiting for the store."""
        return sum(len(h.messages) for h in self._held.values())

    async def open(self, session_id: str, *, title: str, metadata: Mapping[str, Any]) -> None:
        """Create the thread of ``session_id`` (held for later if the store fails)."""
        held = _Held(title=title, metadata=metadata, created=False)
        if self._problem is None:
            try:
                await anyio.to_thread.run_sync(self._write, session_id, held)
                return
            except Exception as exc:
                async with self._lock:
                    self._held[session_id] = held
                    self._holding.set()
                    self._failed(exc)
                return
        async with self._lock:
            self._held[session_id] = held
            self._holding.set()
            await self._flush()

    async def append(self, session_id: str, messages: Iterable[Message]) -> None:
        """Append ``messages`` to the thread of ``session_id``, after whatever it
        still holds; held for later if the store fails."""
        # Their ids are given here, once: a retry then writes the same messages,
        # which lets it see what a failed attempt stored after all.
        batch = stamp(session_id, messages)
        if not batch:
            return
        if self._problem is None and session_id not in self._held:
            # The usual case: straight to the store, sessions at once; here, when
            # the store can append without waiting (a worker thread costs more).
            try:
                if not self._append_now(session_id, batch):
                    await anyio.to_thread.run_sync(self._store.append, session_id, batch)
                return
            except Exception as exc:
                async with self._lock:
                    self._hold(session_id, batch)
                    self._held[session_id].tried = True
                    self._failed(exc)
                return
        async with self._lock:
            self._hold(session_id, batch)
            await self._flush()

    def _hold(self, session_id: str, batch: list[Message]) -> None:
        """Keep ``batch`` for the store, after what ``session_id`` holds, within the bound."""
        held = self._held.setdefault(session_id, _Held())
        self._holding.set()
        size = _size(batch)
        if sum(h.size for h in self._held.values()) + size > self._held_bytes:
            held.dropped += len(batch)
            logger.error(
                "the transcript of session %s lost %d messages: the store fails (%s) "
                "and more than %d bytes are held already",
                session_id,
                len(batch),
                self._problem,
                self._held_bytes,
            )
            return
        held.messages.extend(batch)
        held.size += size

    def notice(self, session_id: str, reply_to: str | None) -> Message | None:
        """The note for a run's stream when ``session_id``'s thread is behind, else None."""
        held = self._held.get(session_id)
        if held is None or (not held.messages and not held.dropped):
            return None
        text = (
            f"The transcript store failed ({self._problem}): {len(held.messages)} messages "
            "of this session are held in memory and will be written in order once it works "
            "again (they are lost if the server stops first)"
        )
        if held.dropped:
            text += f"; {held.dropped} messages could not be held and are missing from it"
        return replies.notice(
            text + ".",
            STORE_UNAVAILABLE,
            reply_to,
            held=len(held.messages),
            dropped=held.dropped,
            problem=self._problem,
        )

    async def _flush(self) -> None:
        """Write what is held, session by session, unless the store failed a moment ago."""
        if not self._held or anyio.current_time() < self._retry_at:
            return
        for session_id, held in list(self._held.items()):
            try:
                await anyio.to_thread.run_sync(self._write, session_id, held)
            except ThreadNotFound as exc:
                held.created = False  # removed under us: made again on the next try
                self._failed(exc)
                return
            except Exception as exc:
                self._failed(exc)
                return
            if held.dropped:
                # The messages themselves are gone; the notices said so until now.
                logger.warning(
                    "the transcript of session %s is written again, %d messages short",
                    session_id,
                    held.dropped,
                )
            del self._held[session_id]
        if self._problem is not None:
            logger.info("the transcript store works again: every held message is written")
        self._problem, self._retry_after = None, _RETRY_FIRST

    def _write(self, session_id: str, held: _Held) -> None:
        """Create the thread if it is owed, then append its held messages (in a thread)."""
        if not held.created:
            # ThreadExists: made by an attempt whose answer was lost.
            with contextlib.suppress(ThreadExists):
                self._store.create(session_id, title=held.title or "", metadata=held.metadata)
            held.created = True
        if held.tried:
            held.messages = self._not_stored(session_id, held.messages)
            held.size = _size(held.messages)
        if held.messages:
            held.tried = True  # until it returns
            self._store.append(session_id, held.messages)
            held.messages, held.size = [], 0
        held.tried = False

    def _not_stored(self, session_id: str, messages: list[Message]) -> list[Message]:
        """``messages`` without those an append that failed stored all the same.

        Every attempt appends the whole of what is held, all or nothing, and what
        is held only grows at its end: what a lost attempt stored is a prefix,
        found among the thread's last messages by id."""
        stored = self._store.messages(session_id)[-len(messages) :] if messages else []
        ids = {message.id for message in stored}
        kept = 0
        while kept < len(messages) and messages[kept].id in ids:
            kept += 1
        if kept:
            logger.warning(
                "%d messages of session %s were stored by an append that seemed to fail; "
                "they are not written again",
                kept,
                session_id,
            )
        return messages[kept:]

    def _failed(self, exc: Exception) -> None:
        if self._problem is None:
            logger.error("the transcript store fails; holding messages: %s", exc, exc_info=exc)
        else:
            logger.debug("the transcript store still fails: %s", exc)
        self._problem = f"{type(exc).__name__}: {exc}"
        self._retry_at = anyio.current_time() + self._retry_after
        self._retry_after = min(self._retry_after * 2, _RETRY_MOST)

    async def keep_trying(self) -> None:
        """Write runs' output behind them, and what is held as soon as the store
        may be tried again, without waiting for a session's next run (the service
        runs this until it stops)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.behind.run)
            while True:
                await self._holding.wait()
                await anyio.sleep_until(self._retry_at)
                async with self._lock:
                    await self._flush()
                    if not self._held:
                        self._holding = anyio.Event()

    async def aclose(self) -> None:
        """Write what is held if the store lets us, then close it."""
        async with self._lock:
            self._retry_at = 0.0
            await self._flush()
            for session_id, held in self._held.items():
                if held.messages:
                    logger.error(
                        "the transcript of session %s lost %d messages: the store failed (%s)",
                        session_id,
                        len(held.messages),
                        self._problem,
                    )
        await anyio.to_thread.run_sync(self._store.close)
