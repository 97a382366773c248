"""Threads in Jan's folder layout: ``<root>/threads/<id>/thread.json`` describes the
thread, ``messages.jsonl`` beside it holds one Jan ``thread.message`` per line (its
LMC message in ``metadata.lmc``). Appends are made under an exclusive ``flock`` and
fsynced before ``append`` returns; with ``group_commit``, once written, and a thread
of the store fsyncs them within 10 ms. A torn last line is skipped on load. A thread's
folder is made under a hidden name and renamed into place, under a store-wide lock;
a folder without a readable ``thread.json`` is not a thread (``create`` moves it
aside). Every lock is waited for at most ``lock_timeout`` seconds, then StoreError.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..adapters.jan import from_jan, seconds, to_jan
from ..errors import MessageError, StoreError, ThreadExists, ThreadNotFound
from ..messages import Message, new_id
from ._files import (
    append_lines,
    fsync_dir,
    locked,
    read_json_lines,
    write_json_atomic,
    write_lines,
    write_lines_now,
)
from ._group import GroupSync
from .base import Thread, ThreadStore, matches, stamp, validate_thread_id

__all__ = ["JanThreadStore"]

logger = logging.getLogger(__name__)

ASSISTANT_ID = "lmc-runtime"

#: How many found threads :class:`JanThreadStore` remembers.
_FOUND_MOST = 4096


@contextlib.contextmanager
def _thread_errors(thread_id: str, doing: str) -> Iterator[None]:
    """A thread folder gone: :class:`ThreadNotFound`; another OSError: :class:`StoreError`."""
    try:
        yield
    except FileNotFoundError:
        raise ThreadNotFound(thread_id) from None
    except OSError as exc:
        raise StoreError(f"cannot {doing} thread {thread_id!r}: {exc}") from exc


class JanThreadStore(ThreadStore):
    """A :class:`~lmc_runtime.store.base.ThreadStore` in Jan's folder layout under ``root``.

    ``group_commit``: ``append`` does not wait for the disk (see the module);
    an fsync that failed makes the next ``append`` raise StoreError, and
    :meth:`close` waits until every append is on disk.
    """

    def __init__(
        self, root: Path | str, *, lock_timeout: float = 10.0, group_commit: bool = False
    ) -> None:
        self.root = Path(root)
        self.lock_timeout = lock_timeout
        self._group = GroupSync() if group_commit else None
        #: Threads an append found (their ``thread.json`` read once, not on every
        #: append); forgotten when deleted here, and all at once past a bound. A
        #: thread deleted elsewhere is a folder renamed away: the append's open fails.
        self._found: set[str] = set()
        self._threads = self.root / "threads"
        try:
            self._threads.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot make the thread folder {self._threads}: {exc}") from exc
        self._sweep()

    def _dir(self, thread_id: str) -> Path:
        return self._threads / validate_thread_id(thread_id)

    def _sweep(self) -> None:
        """Remove the hidden folders crashed deletes and creates left behind."""
        for grave in self._threads.glob(".deleted-*"):
            shutil.rmtree(grave, ignore_errors=True)
        try:
            with self._store_lock(timeout=0):
                # Creates hold this lock throughout, so no staging folder is in use now.
                for staging in self._threads.glob(".creating-*"):
                    shutil.rmtree(staging, ignore_errors=True)
        except StoreError:
            logger.debug("a thread is being created elsewhere; staging folders stay")

    @contextlib.contextmanager
    def _store_lock(self, timeout: float | None = None) -> Iterator[None]:
        path = self.root / ".lmc-threads.lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open the store lock {path}: {exc}") from exc
        try:
            with locked(fd, self.lock_timeout if timeout is None else timeout, path):
                yield
        finally:
            os.close(fd)

    def _add(self, thread: Thread) -> None:
        folder = self._dir(thread.id)
        with self._store_lock():
            if self._load(thread.id) is not None:
                raise ThreadExists(thread.id)
            if os.path.lexists(folder):
                self._set_aside(folder)
            staging = self._threads / f".creating-{thread.id}-{new_id()}"
            try:
                staging.mkdir()
                (staging / "messages.jsonl").touch()
                write_json_atomic(staging / "thread.json", _thread_json(thread))
                os.rename(staging, folder)
                fsync_dir(self._threads)
            except OSError as exc:
                shutil.rmtree(staging, ignore_errors=True)
                if os.path.lexists(folder) and self._load(thread.id) is not None:
                    raise ThreadExists(thread.id) from exc  # made by someone else meanwhile
                raise StoreError(f"cannot create thread {thread.id!r}: {exc}") from exc

    def _set_aside(self, folder: Path) -> None:
        """Move a folder that is not a thread out of the way; drop it if it holds no messages."""
        aside = self._threads / f".damaged-{folder.name}-{new_id()}"
        try:
            os.rename(folder, aside)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(f"cannot move the damaged thread folder {folder}: {exc}") from exc
        messages = aside / "messages.jsonl"
        if messages.is_file() and messages.stat().st_size > 0:
            logger.warning("%s had no valid thread.json; it is kept as %s", folder, aside)
        else:
            shutil.rmtree(aside, ignore_errors=True)

    def list(self) -> builtins.list[Thread]:
        threads = []
        for folder in self._threads.iterdir():
            if folder.name.startswith(".") or not folder.is_dir():
                continue
            try:
                thread = self._load(folder.name)
            except StoreError as exc:  # an unsafe name, an unreadable file
                logger.warning("skipped thread folder %s: %s", folder, exc)
                continue
            if thread is not None:
                threads.append(thread)
        return sorted(threads, key=lambda t: (t.created_at, t.id))

    def get(self, thread_id: str) -> Thread:
        thread = self._load(thread_id)
        if thread is None:
            raise ThreadNotFound(thread_id)
        return thread

    def _load(self, thread_id: str) -> Thread | None:
        """The thread, or None if there is none (or only what a crash left of one)."""
        path = self._dir(thread_id) / "thread.json"
        try:
            data = json.loads(path.read_bytes())
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except (ValueError, RecursionError) as exc:  # bad UTF-8, endless digits, deep nesting
            logger.warning("%s is not valid JSON, so this is no thread: %.200s", path, exc)
            return None
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc}") from exc
        if not isinstance(data, dict):
            logger.warning("%s does not hold a JSON object, so this is no thread", path)
            return None
        try:
            created = seconds(data.get("created", data.get("created_at", 0)))
        except OverflowError:  # an integer past any float
            created = None
        title = data.get("title", "")
        metadata = data.get("metadata")
        return Thread(
            id=thread_id,
            title=title if isinstance(title, str) else "",
            created_at=int(created) if created is not None else 0,
            metadata=dict(metadata) if isinstance(metadata, dict) else {},
        )

    def messages(self, thread_id: str) -> builtins.list[Message]:
        folder = self._dir(thread_id)
        self.get(thread_id)
        try:
            records = read_json_lines(folder / "messages.jsonl")
        except FileNotFoundError:
            self.get(thread_id)
            records = []  # Jan makes the file with the first message
        except OSError as exc:
            raise StoreError(f"cannot read the messages of {thread_id!r}: {exc}") from exc
        out = []
        for record in records:
            try:
                out.extend(from_jan([record]) if isinstance(record, dict) else [])
            except MessageError as exc:
                logger.warning("%s: skipped a record that is not a message: %s", folder, exc)
        return out

    def append(self, thread_id: str, messages: Iterable[Message]) -> None:
        self._append(thread_id, messages, wait=True)

    def append_now(self, thread_id: str, messages: Iterable[Message]) -> bool:
        """:meth:`append` if it needs no wait (``group_commit``, a thread found
        before, its file not locked): fit for an event loop. False if it would wait."""
        if self._group is None or thread_id not in self._found:
            return False
        return self._append(thread_id, messages, wait=False)

    def _append(self, thread_id: str, messages: Iterable[Message], *, wait: bool) -> bool:
        folder = self._dir(thread_id)
        stamped = stamp(thread_id, messages)
        if thread_id not in self._found:
            self.get(thread_id)
            if len(self._found) >= _FOUND_MOST:
                self._found.clear()
            self._found.add(thread_id)
        if not stamped:
            return True
        records = to_jan(stamped, thread_id=thread_id, assistant_id=ASSISTANT_ID)
        lines = [_dumps(record) for record in records]
        path = folder / "messages.jsonl"
        with _thread_errors(thread_id, "append to"):
            if self._group is None:
                append_lines(path, lines, self.lock_timeout)
                return True
            if (failure := self._group.failure()) is not None:
                raise OSError(failure.errno, f"an earlier append did not reach the disk: {failure}")
            fd = (
                write_lines(path, lines, self.lock_timeout)
                if wait
                else write_lines_now(path, lines)
            )
            if fd is not None:
                self._group.hand_over(path, fd)
            return fd is not None

    def delete(self, thread_id: str) -> None:
        folder = self._dir(thread_id)
        self._found.discard(thread_id)
        with self._store_lock():
            self.get(thread_id)
            # Renamed first, so the thread disappears at once and as a whole.
            grave = self._threads / f".deleted-{thread_id}-{new_id()}"
            with _thread_errors(thread_id, "delete"):
                os.rename(folder, grave)
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
        """With ``group_commit``, wait until every append is on disk."""
        if self._group is not None:
            self._group.close()


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
