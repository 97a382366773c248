"""Threads in one SQLite file (the stdlib ``sqlite3``).

WAL journal, ``synchronous=FULL`` (an append is on disk when it returns),
foreign keys on, so deleting a thread deletes its messages. One connection,
guarded by a lock: the store is safe to share between threads.
"""

from __future__ import annotations

import builtins
import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import StoreError, ThreadExists, ThreadNotFound
from ..messages import Message, parse_message
from .base import Thread, searchable_text, stamp, validate_thread_id

__all__ = ["SqliteThreadStore"]

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


_SURROGATE = re.compile("[\ud800-\udfff]")


def _sql_text(text: str) -> str:
    """``text`` as SQLite can hold it: a lone surrogate (not UTF-8) becomes U+FFFD.

    Only titles and the search column go through this; message bodies are
    stored as ASCII JSON, so their content comes back exactly.
    """
    return _SURROGATE.sub("\ufffd", text)


class SqliteThreadStore:
    """A :class:`~lmc_runtime.store.base.ThreadStore` in the SQLite file at ``path``."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the thread database {self.path}: {exc}") from exc

    def _exists(self, thread_id: str) -> bool:
        row = self._db.execute("SELECT 1 FROM threads WHERE id = ?", (thread_id,)).fetchone()
        return row is not None

    def create(
        self,
        thread_id: str | None = None,
        *,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> Thread:
        thread = Thread.new(thread_id, title, metadata)
        with self._lock:
            try:
                self._db.execute(
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
        return thread

    def list(self) -> builtins.list[Thread]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, title, created_at, metadata FROM threads ORDER BY created_at, id"
            ).fetchall()
        return [Thread(row[0], row[1], row[2], json.loads(row[3])) for row in rows]

    def get(self, thread_id: str) -> Thread:
        validate_thread_id(thread_id)
        with self._lock:
            row = self._db.execute(
                "SELECT id, title, created_at, metadata FROM threads WHERE id = ?", (thread_id,)
            ).fetchone()
        if row is None:
            raise ThreadNotFound(thread_id)
        return Thread(row[0], row[1], row[2], json.loads(row[3]))

    def messages(self, thread_id: str) -> builtins.list[Message]:
        validate_thread_id(thread_id)
        with self._lock:
            if not self._exists(thread_id):
                raise ThreadNotFound(thread_id)
            rows = self._db.execute(
                "SELECT body FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,)
            ).fetchall()
        return [parse_message(json.loads(row[0])) for row in rows]

    def append(self, thread_id: str, messages: Iterable[Message]) -> None:
        validate_thread_id(thread_id)
        stamped = stamp(thread_id, messages)
        rows = [
            (thread_id, json.dumps(m.to_dict()), _sql_text(searchable_text(m).casefold()))
            for m in stamped
        ]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if not self._exists(thread_id):
                    raise ThreadNotFound(thread_id)
                self._db.executemany(
                    "INSERT INTO messages (thread_id, body, folded) VALUES (?, ?, ?)", rows
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def delete(self, thread_id: str) -> None:
        validate_thread_id(thread_id)
        with self._lock:
            cursor = self._db.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
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
        with self._lock:
            if thread_id is not None and not self._exists(thread_id):
                raise ThreadNotFound(thread_id)
            rows = self._db.execute(query, params).fetchall()
        return [(row[0], parse_message(json.loads(row[1]))) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
