"""The thread store interface, and what every store shares.

A thread is a conversation: an id, a title, a creation time and metadata, plus
its messages in order. Stores are synchronous and thread-safe; async code calls
them through ``anyio.to_thread.run_sync``.

Every stored message carries the envelope: ``append`` gives a message without
an ``id`` a fresh one and sets ``conversation_id`` to the thread's id when it
is missing. ``in_reply_to`` is kept as the message has it.
"""

from __future__ import annotations

import builtins
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidThreadId
from ..messages import Message, new_id, parse_message

__all__ = [
    "Thread",
    "ThreadStore",
    "matches",
    "new_thread_id",
    "searchable_text",
    "stamp",
    "validate_thread_id",
]

_THREAD_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}")


@dataclass(frozen=True)
class Thread:
    """One conversation (``created_at`` in whole Unix seconds, as Jan has it)."""

    id: str
    title: str
    created_at: int
    metadata: dict[str, Any]

    @classmethod
    def new(cls, thread_id: str | None, title: str, metadata: Mapping[str, Any] | None) -> Thread:
        """A thread created now: ``thread_id`` checked, or a fresh one."""
        return cls(
            id=validate_thread_id(thread_id) if thread_id is not None else new_thread_id(),
            title=title,
            created_at=int(time.time()),
            metadata=dict(metadata or {}),
        )


@runtime_checkable
class ThreadStore(Protocol):
    """Where conversations are kept. Sync and thread-safe.

    The stores of this package derive from it and share :meth:`create`, which
    makes the :class:`Thread` (its id checked, or a fresh one) for their ``_add``.
    """

    def create(
        self,
        thread_id: str | None = None,
        *,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> Thread:
        """A new empty thread (a fresh id if none is given); ThreadExists if taken."""
        thread = Thread.new(thread_id, title, metadata)
        self._add(thread)
        return thread

    def _add(self, thread: Thread) -> None:
        """Keep ``thread``, new and empty; ThreadExists if its id is taken."""
        ...

    def list(self) -> builtins.list[Thread]:
        """Every thread, oldest first."""
        ...

    def get(self, thread_id: str) -> Thread:
        """One thread; raises ThreadNotFound."""
        ...

    def messages(self, thread_id: str) -> builtins.list[Message]:
        """A thread's messages in order; raises ThreadNotFound."""
        ...

    def append(self, thread_id: str, messages: Iterable[Message]) -> None:
        """Add messages at the end, durably; raises ThreadNotFound."""
        ...

    def delete(self, thread_id: str) -> None:
        """Remove a thread and its messages; raises ThreadNotFound."""
        ...

    def search(
        self, text: str, *, thread_id: str | None = None, limit: int = 100
    ) -> builtins.list[tuple[str, Message]]:
        """Messages whose text contains ``text`` (case-insensitive), as (thread id, message)."""
        ...

    def close(self) -> None:
        """Release the store's resources."""
        ...


def validate_thread_id(thread_id: object) -> str:
    """``thread_id`` if it is safe as a folder name; InvalidThreadId if not.

    Allowed: 1 to 128 of ``A-Z a-z 0-9 _ . : -``, not starting with ``.`` or
    ``-`` (so no ``..``, no hidden folders, no path separators).
    """
    if not isinstance(thread_id, str):
        raise InvalidThreadId(thread_id, "it must be a string")
    if not _THREAD_ID.fullmatch(thread_id):
        raise InvalidThreadId(
            thread_id,
            "use 1 to 128 letters, digits, '_', '.', ':' or '-', "
            "starting with a letter, digit or '_'",
        )
    if ".." in thread_id:
        raise InvalidThreadId(thread_id, "'..' is not allowed")
    return thread_id


def new_thread_id() -> str:
    """A fresh thread id."""
    return f"thread_{new_id()}"


def stamp(
    thread_id: str, messages: Iterable[Message | Mapping[str, Any]]
) -> builtins.list[Message]:
    """The messages with the envelope filled in: an id and the conversation id."""
    out = []
    for message in messages:
        parsed = parse_message(message)
        update: dict[str, Any] = {}
        if parsed.id is None:
            update["id"] = new_id()
        if parsed.conversation_id is None:
            update["conversation_id"] = thread_id
        out.append(parsed.model_copy(update=update) if update else parsed)
    return out


def searchable_text(message: Message) -> str:
    """The text search looks at (none for base64 images and audio)."""
    if not isinstance(message.content, str):
        return ""
    if message.type == "audio" or (message.type == "image" and message.format != "path"):
        return ""
    return message.content


def matches(message: Message, needle: str) -> bool:
    """Whether the message's text contains ``needle``, ignoring case."""
    return needle.casefold() in searchable_text(message).casefold()
