"""Threads in PostgreSQL (psycopg 3 and its connection pool).

Two tables, ``lmc_threads`` and ``lmc_messages``, made on first use (``CREATE
... IF NOT EXISTS`` under an advisory lock, so replicas starting at once do
not trip over each other) in the first schema of the connection's
``search_path``. Every thread row counts its messages (``next_seq``): an
append takes the next numbers under the row's lock, so concurrent appends to
one thread, from any number of processes, line up whole and in order, and a
thread deleted meanwhile is ThreadNotFound. An append returns once its
transaction is committed with ``synchronous_commit`` on, whatever the
server's default: it is durable then. Threads list oldest first, ties in
the byte order of their ids (as in SQLite), whatever the database's collation.

Message bodies are kept as ASCII JSON text, so they come back exactly (NUL
and lone surrogates included); titles and the search column, which
PostgreSQL's text cannot hold as such, get U+FFFD in place of those. Every
psycopg error, and a pool that hands out no connection in time, comes out as
StoreError; the URL in messages never shows a password.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import MissingExtra, StoreError, ThreadExists, ThreadNotFound
from ..messages import Message
from ._sql import COLUMNS, SqlThreadStore, loaded, message_columns, thread_row
from .base import Thread, stamp, validate_thread_id

try:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as exc:
    raise MissingExtra("the PostgreSQL thread store", "postgres", missing=exc.name) from exc

__all__ = ["PostgresThreadStore", "redact"]

logger = logging.getLogger(__name__)

#: The key of the advisory lock the schema is made under ("lmc-thr" in ASCII).
_SCHEMA_LOCK = 0x6C6D632D746872

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS lmc_threads (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        metadata TEXT NOT NULL,
        next_seq BIGINT NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS lmc_messages (
        thread_id TEXT NOT NULL REFERENCES lmc_threads(id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        body TEXT NOT NULL,
        folded TEXT NOT NULL,
        PRIMARY KEY (thread_id, seq)
    )""",
    'CREATE INDEX IF NOT EXISTS lmc_threads_by_age ON lmc_threads (created_at, id COLLATE "C")',
)


def redact(url: str) -> str:
    """``url`` as it may be shown: ``postgresql://user@host:port/db``, no password."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "an unreadable PostgreSQL URL"
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host', '')}{port}/{parts.get('dbname', '')}"


def _said(exc: BaseException) -> str:
    """What psycopg says, in one line (libpq's messages span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _durable(conn: psycopg.Connection[Any]) -> None:
    """A pooled connection's setting: commits wait for the WAL on disk."""
    conn.execute("SET synchronous_commit = on")


class PostgresThreadStore(SqlThreadStore):
    """A :class:`~lmc_runtime.store.base.ThreadStore` in the PostgreSQL database at ``url``.

    ``url`` is a libpq URL or conninfo string (``postgresql://user:pw@host/db``).
    The constructor connects once, makes the schema and opens a pool of at most
    ``pool_size`` connections; a database it cannot reach within
    ``connect_timeout`` seconds (unless the URL sets its own) is StoreError.
    A call waits at most ``timeout`` seconds for a pooled connection.
    """

    threads_table = "lmc_threads"
    messages_table = "lmc_messages"
    mark = "%s"
    collate = ' COLLATE "C"'

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
    ) -> None:
        self.location = redact(url)
        try:
            params: dict[str, Any] = conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise StoreError(f"not a PostgreSQL URL: {_said(exc)}") from exc
        params.setdefault("connect_timeout", max(1, round(connect_timeout)))
        self._make_schema(params)
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            kwargs={**params, "autocommit": True},
            min_size=1,
            max_size=max(1, pool_size),
            open=False,
            configure=_durable,
            check=ConnectionPool.check_connection,
            timeout=timeout,
            name=f"lmc-threads {self.location}",
        )
        self._pool.open(wait=False)

    def __repr__(self) -> str:
        return f"PostgresThreadStore({self.location!r})"

    def _make_schema(self, params: dict[str, Any]) -> None:
        try:
            with psycopg.connect(**params) as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                for statement in _SCHEMA:
                    conn.execute(statement)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot open the thread database {self.location}: {_said(exc)}"
            ) from exc

    @contextlib.contextmanager
    def _using(self, doing: str) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; psycopg and pool errors inside become StoreError."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise StoreError(
                f"cannot {doing}: no connection to {self.location} within "
                f"{self._pool.timeout:g} seconds ({_said(exc)})"
            ) from exc
        except psycopg.Error as exc:
            raise StoreError(f"cannot {doing} in {self.location}: {_said(exc)}") from exc

    def _add(self, thread: Thread) -> None:
        with self._using("create a thread") as conn:
            cursor = conn.execute(
                f"INSERT INTO lmc_threads ({COLUMNS}) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING",
                thread_row(thread),
            )
        if cursor.rowcount == 0:
            raise ThreadExists(thread.id)

    def messages(self, thread_id: str) -> builtins.list[Message]:
        validate_thread_id(thread_id)
        with self._using("read messages") as conn:
            # One statement, one snapshot: no row at all when the thread does not
            # exist, one row with a NULL body when it has no messages.
            rows = conn.execute(
                "SELECT m.body FROM lmc_threads t LEFT JOIN lmc_messages m ON m.thread_id = t.id "
                "WHERE t.id = %s ORDER BY m.seq",
                (thread_id,),
            ).fetchall()
        if not rows:
            raise ThreadNotFound(thread_id)
        bodies = (row[0] for row in rows if row[0] is not None)
        return loaded(bodies)

    def append(self, thread_id: str, messages: Iterable[Message]) -> None:
        validate_thread_id(thread_id)
        stamped = stamp(thread_id, messages)
        with self._using("append messages") as conn, conn.transaction():
            row = conn.execute(
                "UPDATE lmc_threads SET next_seq = next_seq + %s WHERE id = %s RETURNING next_seq",
                (len(stamped), thread_id),
            ).fetchone()
            if row is None:
                raise ThreadNotFound(thread_id)
            first = int(row[0]) - len(stamped)
            with conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO lmc_messages (thread_id, seq, body, folded) "
                    "VALUES (%s, %s, %s, %s)",
                    [
                        (thread_id, first + offset, *message_columns(m))
                        for offset, m in enumerate(stamped)
                    ],
                )

    def close(self) -> None:
        self._pool.close()
