"""Thread stores: conversations of LMC messages, kept durably.

:class:`ThreadStore` is the interface; :class:`JanThreadStore` keeps Jan's
folder layout (``threads/<id>/thread.json`` plus ``messages.jsonl``),
:class:`SqliteThreadStore` one SQLite file and :class:`PostgresThreadStore`
a PostgreSQL database that several processes share (the ``[postgres]`` extra;
psycopg is imported only when it is used). :func:`open_store` opens the one a
setting names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Thread, ThreadStore, validate_thread_id
from .jan import JanThreadStore
from .spec import open_store
from .sqlite import SqliteThreadStore

if TYPE_CHECKING:
    from .postgres import PostgresThreadStore

__all__ = [
    "JanThreadStore",
    "PostgresThreadStore",
    "SqliteThreadStore",
    "Thread",
    "ThreadStore",
    "open_store",
    "validate_thread_id",
]


def __getattr__(name: str) -> Any:
    if name == "PostgresThreadStore":
        from .postgres import PostgresThreadStore

        return PostgresThreadStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
