"""Threads in one SQLite file (the stdlib ``sqlite3``).

WAL journal, ``synchronous=FULL`` (an append is on disk when it returns),
foreign keys on, so deleting a thread deletes its messages. One connection,
guarded by a lock: the store is safe to share between threads. A database
another connection keeps locked is waited for at most ``busy_timeout``
seconds; that, and every other ``sqlite3`` error, comes out as StoreError.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import MessageError, StoreError, ThreadExists, ThreadNotFound
from ..messages import Message, parse_message
from .base import Thread, ThreadStore, searchable_text, stamp, validate_thread_id

__all__ = ["SqliteThreadStore"]

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    metadata TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    body TEXT NOT NULL,
    folded TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_thread ON messages(thread_id, seq);
"""


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


#: Lone surrogates (not UTF-8) and NUL (where LIKE stops reading).
_SURROGATE = re.compile("[\x00\ud800-\udfff]")


def _sql_text(text: str) -> str:
    """``text`` as SQLite can hold and search it: NUL and lone surrogates become U+FFFD.

    Only titles and the search column go through this; message bodies are
    stored as ASCII JSON, so their content comes back exactly.
    """
    return _SURROGATE.sub("\ufffd", text)


def _metadata(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        logger.warning("a thread's metadata is not valid JSON; it reads as empty")
        return {}
    return data if isinstance(data, dict) else {}


def _thread(row: Any) -> Thread:
    return Thread(row[0], row[1], row[2], _metadata(row[3]))


def _messages(bodies: Iterable[str]) -> Iterator[Message | None]:
    """Each stored body as a message; None (with a warning) for one that is not."""
    for body in bodies:
        try:
            yield parse_message(json.loads(body))
        except (ValueError, RecursionError, MessageError) as exc:
            logger.warning("skipped a stored message that does not load: %.200s", exc)
            yield None


class SqliteThreadStore(ThreadStore):
    """A :class:`~lmc_runtime.store.base.ThreadStore` in the SQLite file at ``path``."""

    def __init__(self, path: Path | str, *, busy_timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, check_same_thread=False, isolation_level=None
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the thread database {self.path}: {exc}") from exc

    @contextlib.contextmanager
    def _using(self, doing: str) -> Iterator[sqlite3.Connection]:
        """The connection, held alone; sqlite3 errors inside become StoreError."""
        with self._lock:
            try:
                yield self._db
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    raise StoreError(
                        f"cannot {doing}: {self.path} stayed locked by another connection "
                        f"for {self.busy_timeout:g} seconds"
                    ) from exc
                raise StoreError(f"cannot {doing} in {self.path}: {exc}") from exc
            except sqlite3.Error as exc:
                raise StoreError(f"cannot {doing} in {self.path}: {exc}") from exc

    def _exists(self, db: sqlite3.Connection, thread_id: str) -> bool:
        row = db.execute("SELECT 1 FROM threads WHERE id = ?", (thread_id,)).fetchone()
        return row is not None

    def _add(self, thread: Thread) -> None:
        with self._using("create a thread") as db:
            try:
                db.execute(
                    "INSERT INTO threads (id, title, created_at, metadata) VALUES (?, ?, ?, ?)",
                    (
                        thread.id,
                        _sql_text(thread.title),
                        thread.created_at,
                        json.dumps(thread.metadata),
                    ),
                )
            except sqlite3.IntegrityError:
                raise ThreadExists(thread.id) from None

    def list(self) -> builtins.list[Thread]:
        with self._using("list threads") as db:
            rows = db.execute(
                "SELECT id, title, created_at, metadata FROM threads ORDER BY created_at, id"
            ).fetchall()
        return [_thread(row) for row in rows]

    def get(self, thread_id: str) -> Thread:
        validate_thread_id(thread_id)
        with self._using("read a thread") as db:
            row = db.execute(
                "SELECT id, title, created_at, metadata FROM threads WHERE id = ?", (thread_id,)
            ).fetchone()
        if row is None:
            raise ThreadNotFound(thread_id)
        return _thread(row)

    def messages(self, thread_id: str) -> builtins.list[Message]:
        validate_thread_id(thread_id)
        with self._using("read messages") as db:
            if not self._exists(db, thread_id):
                raise ThreadNotFound(thread_id)
            rows = db.execute(
                "SELECT body FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,)
            ).fetchall()
        return [m for m in _messages(row[0] for row in rows) if m is not None]

    def append(self, thread_id: str, messages: Iterable[Message]) -> None:
        validate_thread_id(thread_id)
        stamped = stamp(thread_id, messages)
        rows = [
            (thread_id, json.dumps(m.to_dict()), _sql_text(searchable_text(m).casefold()))
            for m in stamped
        ]
        with self._using("append messages") as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                if not self._exists(db, thread_id):
                    raise ThreadNotFound(thread_id)
                db.executemany(
                    "INSERT INTO messages (thread_id, body, folded) VALUES (?, ?, ?)", rows
                )
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def delete(self, thread_id: str) -> None:
        validate_thread_id(thread_id)
        with self._using("delete a thread") as db:
            cursor = db.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
        if cursor.rowcount == 0:
            raise ThreadNotFound(thread_id)

    def search(
        self, text: str, *, thread_id: str | None = None, limit: int = 100
    ) -> builtins.list[tuple[str, Message]]:
        query = (
            "SELECT m.thread_id, m.body FROM messages m JOIN threads t ON t.id = m.thread_id "
            "WHERE m.folded LIKE ? ESCAPE '\\'"
        )
        params: builtins.list[Any] = [f"%{_escape_like(_sql_text(text.casefold()))}%"]
        if thread_id is not None:
            validate_thread_id(thread_id)
            query += " AND m.thread_id = ?"
            params.append(thread_id)
        query += " ORDER BY t.created_at, t.id, m.seq LIMIT ?"
        params.append(max(limit, 0))
        with self._using("search messages") as db:
            if thread_id is not None and not self._exists(db, thread_id):
                raise ThreadNotFound(thread_id)
            rows = db.execute(query, params).fetchall()
        loaded = _messages(row[1] for row in rows)
        return [(row[0], m) for row, m in zip(rows, loaded, strict=True) if m is not None]

    def close(self) -> None:
        with self._using("close the database") as db:
            db.close()
