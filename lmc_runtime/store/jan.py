"""Threads in Jan's folder layout.

``<root>/threads/<id>/thread.json`` describes the thread (written atomically);
``<root>/threads/<id>/messages.jsonl`` holds one Jan ``thread.message`` per line,
each carrying its LMC message losslessly in ``metadata.lmc``. Appends are
append-only, under an exclusive ``flock`` (so concurrent writers, in this
process or another, never interleave) and fsynced before ``append`` returns. A
torn last line left by a crash is skipped with a warning on load.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import shutil
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..adapters.jan import from_jan, seconds, to_jan
from ..errors import MessageError, StoreError, ThreadExists, ThreadNotFound
from ..messages import Message, new_id
from ._files import append_lines, read_json_lines, write_json_atomic
from .base import Thread, matches, stamp, validate_thread_id

__all__ = ["JanThreadStore"]

logger = logging.getLogger(__name__)

ASSISTANT_ID = "lmc-runtime"


class JanThreadStore:
    """A :class:`~lmc_runtime.store.base.ThreadStore` in Jan's folder layout under ``root``."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._threads = self.root / "threads"
        self._threads.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # create/delete against each other

    def _dir(self, thread_id: str) -> Path:
        return self._threads / validate_thread_id(thread_id)

    def create(
        self,
        thread_id: str | None = None,
        *,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> Thread:
        thread = Thread.new(thread_id, title, metadata)
        folder = self._dir(thread.id)
        with self._lock:
            try:
                folder.mkdir()
            except FileExistsError:
                raise ThreadExists(thread.id) from None
            (folder / "messages.jsonl").touch()
            write_json_atomic(folder / "thread.json", _thread_json(thread))
        return thread

    def list(self) -> builtins.list[Thread]:
        threads = []
        for folder in self._threads.iterdir():
            if not folder.is_dir() or folder.name.startswith("."):
                continue
            try:
                threads.append(self.get(folder.name))
            except ThreadNotFound:
                continue  # being created or deleted right now
            except StoreError as exc:
                logger.warning("skipped thread folder %s: %s", folder, exc)
        return sorted(threads, key=lambda t: (t.created_at, t.id))

    def get(self, thread_id: str) -> Thread:
        path = self._dir(thread_id) / "thread.json"
        try:
            data = _read_json(path)
        except FileNotFoundError:
            raise ThreadNotFound(thread_id) from None
        if not isinstance(data, dict):
            raise StoreError(f"{path} does not hold a JSON object")
        created = seconds(data.get("created", data.get("created_at", 0)))
        metadata = data.get("metadata")
        return Thread(
            id=thread_id,
            title=str(data.get("title", "")),
            created_at=int(created) if created is not None else 0,
            metadata=dict(metadata) if isinstance(metadata, dict) else {},
        )

    def messages(self, thread_id: str) -> builtins.list[Message]:
        folder = self._dir(thread_id)
        if not (folder / "thread.json").exists():
            raise ThreadNotFound(thread_id)
        try:
            records = read_json_lines(folder / "messages.jsonl")
        except FileNotFoundError:
            if not (folder / "thread.json").exists():
                raise ThreadNotFound(thread_id) from None
            records = []  # Jan makes the file with the first message
        out = []
        for record in records:
            try:
                out.extend(from_jan([record]) if isinstance(record, dict) else [])
            except MessageError as exc:
                logger.warning("%s: skipped a record that is not a message: %s", folder, exc)
        return out

    def append(self, thread_id: str, messages: Iterable[Message]) -> None:
        folder = self._dir(thread_id)
        stamped = stamp(thread_id, messages)
        if not (folder / "thread.json").exists():
            raise ThreadNotFound(thread_id)
        if not stamped:
            return
        records = to_jan(stamped, thread_id=thread_id, assistant_id=ASSISTANT_ID)
        lines = [_dumps(record) for record in records]
        try:
            append_lines(folder / "messages.jsonl", lines)
        except FileNotFoundError:
            raise ThreadNotFound(thread_id) from None

    def delete(self, thread_id: str) -> None:
        folder = self._dir(thread_id)
        with self._lock:
            if not (folder / "thread.json").exists():
                raise ThreadNotFound(thread_id)
            # Renamed first, so the thread disappears at once and as a whole.
            grave = self._threads / f".deleted-{thread_id}-{new_id()}"
            try:
                os.rename(folder, grave)
            except FileNotFoundError:
                raise ThreadNotFound(thread_id) from None
        shutil.rmtree(grave, ignore_errors=True)

    def search(
        self, text: str, *, thread_id: str | None = None, limit: int = 100
    ) -> builtins.list[tuple[str, Message]]:
        ids = [thread_id] if thread_id is not None else [t.id for t in self.list()]
        found: builtins.list[tuple[str, Message]] = []
        for tid in ids:
            try:
                messages = self.messages(tid)
            except ThreadNotFound:
                if thread_id is not None:
                    raise
                continue  # deleted since it was listed
            for message in messages:
                if len(found) >= limit:
                    return found
                if matches(message, text):
                    found.append((tid, message))
        return found

    def close(self) -> None:
        """Nothing is held open between calls."""


def _thread_json(thread: Thread) -> dict[str, Any]:
    return {
        "id": thread.id,
        "object": "thread",
        "title": thread.title,
        "assistants": [{"assistant_id": ASSISTANT_ID, "assistant_name": ASSISTANT_ID}],
        "created": thread.created_at,
        "updated": thread.created_at,
        "metadata": thread.metadata,
    }


def _dumps(record: Any) -> str:
    return json.dumps(record, separators=(",", ":"))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except ValueError as exc:
        raise StoreError(f"{path} is not valid JSON: {exc}") from exc
