"""Thread stores: conversations of LMC messages kept on disk.

:class:`ThreadStore` is the interface; :class:`JanThreadStore` keeps Jan's
folder layout (``threads/<id>/thread.json`` plus ``messages.jsonl``) and
:class:`SqliteThreadStore` one SQLite file.
"""

from __future__ import annotations

from .base import Thread, ThreadStore, validate_thread_id
from .jan import JanThreadStore
from .sqlite import SqliteThreadStore

__all__ = ["JanThreadStore", "SqliteThreadStore", "Thread", "ThreadStore", "validate_thread_id"]
