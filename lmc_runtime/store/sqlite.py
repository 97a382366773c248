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
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import StoreError, ThreadExists, ThreadNotFound
from ..messages import Message
from ._sql import SqlThreadStore, loaded, message_columns, thread_row
from .base import Thread, stamp, validate_thread_id

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


class SqliteThreadStore(SqlThreadStore):
    """A :class:`~lmc_runtime.store.base.ThreadStore` in the SQLite file at ``path``."""

    threads_table = "threads"
    messages_table = "messages"
    mark = "?"

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

    def _add(self, thread: Thread) -> None:
        with self._using("create a thread") as db:
            try:
                db.execute(
                    "INSERT INTO threads (id, title, created_at, metadata) VALUES (?, ?, ?, ?)",
                    thread_row(thread),
                )
            except sqlite3.IntegrityError:
                raise ThreadExists(thread.id) from None

    def messages(self, thread_id: str) -> builtins.list[Message]:
        validate_thread_id(thread_id)
        with self._using("read messages") as db:
            if not self._exists(db, thread_id):
                raise ThreadNotFound(thread_id)
            rows = db.execute(
                "SELECT body FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,)
            ).fetchall()
        return loaded(row[0] for row in rows)

    def append(self, thread_id: str, messages: Iterable[Message]) -> None:
        validate_thread_id(thread_id)
        stamped = stamp(thread_id, messages)
        rows = [(thread_id, *message_columns(m)) for m in stamped]
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

    def close(self) -> None:
        with self._using("close the database") as db:
            db.close()
