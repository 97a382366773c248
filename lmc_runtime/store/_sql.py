"""What the SQL stores share: text a database can hold, LIKE patterns, the
rows they write, loading what was stored, and :class:`SqlThreadStore`, the
reads, deletes and searches that differ only in table names and placeholders."""

from __future__ import annotations

import builtins
import json
import logging
import re
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol

from ..errors import MessageError, ThreadNotFound
from ..messages import Message, parse_message
from .base import Thread, ThreadStore, searchable_text, validate_thread_id

__all__ = [
    "COLUMNS",
    "SqlThreadStore",
    "escape_like",
    "load_messages",
    "loaded",
    "message_columns",
    "metadata_of",
    "search_hits",
    "sql_text",
    "thread_of",
    "thread_row",
]

logger = logging.getLogger(__name__)

#: A thread's columns, in the order of :func:`thread_row` and :func:`thread_of`.
COLUMNS = "id, title, created_at, metadata"

#: Lone surrogates (not UTF-8) and NUL (which PostgreSQL's text refuses, and
#: where SQLite's LIKE stops reading).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def sql_text(text: str) -> str:
    """``text`` as any SQL database can hold it: NUL and lone surrogates become U+FFFD.

    Only titles and the search column go through this; message bodies are
    stored as ASCII JSON, so their content comes back exactly.
    """
    return _UNSTORABLE.sub("\ufffd", text)


def escape_like(text: str) -> str:
    """``text`` matched literally by ``LIKE ... ESCAPE '\\'``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def metadata_of(text: str) -> dict[str, Any]:
    """A thread's stored metadata; empty (with a warning) when it is not a JSON object."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        logger.warning("a thread's metadata is not valid JSON; it reads as empty")
        return {}
    return data if isinstance(data, dict) else {}


def thread_row(thread: Thread) -> tuple[str, str, int, str]:
    """The ``id, title, created_at, metadata`` columns that keep ``thread``."""
    return (thread.id, sql_text(thread.title), thread.created_at, json.dumps(thread.metadata))


def thread_of(row: Sequence[Any]) -> Thread:
    """The thread an ``id, title, created_at, metadata`` row keeps."""
    return Thread(row[0], row[1], row[2], metadata_of(row[3]))


def message_columns(message: Message) -> tuple[str, str]:
    """The ``body, folded`` columns that keep ``message`` (it comes back from the body)."""
    return json.dumps(message.to_dict()), sql_text(searchable_text(message).casefold())


def load_messages(bodies: Iterable[str]) -> Iterator[Message | None]:
    """Each stored body as a message; None (with a warning) for one that is not."""
    for body in bodies:
        try:
            yield parse_message(json.loads(body))
        except (ValueError, RecursionError, MessageError) as exc:
            logger.warning("skipped a stored message that does not load: %.200s", exc)
            yield None


def loaded(bodies: Iterable[str]) -> list[Message]:
    """The stored bodies that load, as messages, in order."""
    return [m for m in load_messages(bodies) if m is not None]


def search_hits(rows: Iterable[Sequence[Any]]) -> list[tuple[str, Message]]:
    """The ``thread_id, body`` rows of :func:`search_statement` whose body loads."""
    kept = list(rows)
    found = load_messages(row[1] for row in kept)
    return [(row[0], m) for row, m in zip(kept, found, strict=True) if m is not None]


class Cursor(Protocol):
    """What the stores read of a DB-API cursor."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> builtins.list[Any]: ...


class Connection(Protocol):
    """What the stores call on a DB-API connection (sqlite3's and psycopg's)."""

    def execute(self, query: str, params: Sequence[Any] = (), /) -> Cursor: ...


class SqlThreadStore(ThreadStore):
    """The part of a SQL thread store that only its dialect tells apart.

    A store names its ``threads_table`` and ``messages_table``, its driver's
    placeholder ``mark`` and the ``collate`` clause that sorts ids by their
    bytes, and gives :meth:`_using`; it keeps its own creating, reading,
    appending and closing.
    """

    threads_table: ClassVar[str]
    messages_table: ClassVar[str]
    mark: ClassVar[str]
    collate: ClassVar[str] = ""

    @abstractmethod
    def _using(self, doing: str) -> AbstractContextManager[Connection]:
        """A connection for ``doing``; the driver's errors inside become StoreError."""

    def _exists(self, db: Connection, thread_id: str) -> bool:
        query = f"SELECT 1 FROM {self.threads_table} WHERE id = {self.mark}"
        return db.execute(query, (thread_id,)).fetchone() is not None

    def list(self) -> builtins.list[Thread]:
        query = f"SELECT {COLUMNS} FROM {self.threads_table} ORDER BY created_at, id{self.collate}"
        with self._using("list threads") as db:
            rows = db.execute(query).fetchall()
        return [thread_of(row) for row in rows]

    def get(self, thread_id: str) -> Thread:
        validate_thread_id(thread_id)
        query = f"SELECT {COLUMNS} FROM {self.threads_table} WHERE id = {self.mark}"
        with self._using("read a thread") as db:
            row = db.execute(query, (thread_id,)).fetchone()
        if row is None:
            raise ThreadNotFound(thread_id)
        return thread_of(row)

    def delete(self, thread_id: str) -> None:
        validate_thread_id(thread_id)
        query = f"DELETE FROM {self.threads_table} WHERE id = {self.mark}"
        with self._using("delete a thread") as db:
            cursor = db.execute(query, (thread_id,))
        if cursor.rowcount == 0:
            raise ThreadNotFound(thread_id)

    def search(
        self, text: str, *, thread_id: str | None = None, limit: int = 100
    ) -> builtins.list[tuple[str, Message]]:
        query, params = self._search_statement(text, thread_id, limit)
        with self._using("search messages") as db:
            if thread_id is not None and not self._exists(db, thread_id):
                raise ThreadNotFound(thread_id)
            rows = db.execute(query, params).fetchall()
        return search_hits(rows)

    def _search_statement(
        self, text: str, thread_id: str | None, limit: int
    ) -> tuple[str, builtins.list[Any]]:
        """The query of :meth:`search` and its parameters (``thread_id`` checked)."""
        query = (
            f"SELECT m.thread_id, m.body FROM {self.messages_table} m JOIN {self.threads_table} t "
            f"ON t.id = m.thread_id WHERE m.folded LIKE {self.mark} ESCAPE '\\'"
        )
        params: builtins.list[Any] = [f"%{escape_like(sql_text(text.casefold()))}%"]
        if thread_id is not None:
            validate_thread_id(thread_id)
            query += f" AND m.thread_id = {self.mark}"
            params.append(thread_id)
        query += f" ORDER BY t.created_at, t.id{self.collate}, m.seq LIMIT {self.mark}"
        params.append(max(limit, 0))
        return query, params
