"""Durable file operations for the folder store: atomic JSON, locked appends,
tolerant JSON-lines reading."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["append_lines", "read_json_lines", "write_json_atomic"]

logger = logging.getLogger(__name__)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        payload = json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, it still round-trips
        payload = json.dumps(data, indent=2).encode("ascii")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


@contextlib.contextmanager
def _locked(fd: int) -> Iterator[None]:
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def append_lines(path: Path, lines: list[str]) -> None:
    """Append whole lines to ``path`` (made if missing), under an exclusive lock, then fsync.

    A torn last line left by a crashed writer is closed with a newline first, so
    it stays one bad line (skipped on load) instead of spoiling the next record.
    """
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        with _locked(fd):
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            _write_all(fd, data)
            os.fsync(fd)
    finally:
        os.close(fd)


def read_json_lines(path: Path) -> list[Any]:
    """Every JSON line of ``path``; bad lines are skipped with a warning, never fatal."""
    with path.open("rb") as file:
        raw = file.read()
    records = []
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except (ValueError, UnicodeDecodeError):
            torn = number == len(lines)  # no newline after it: a write cut short
            logger.warning(
                "%s: skipped %s line %d (%d bytes) that is not valid JSON",
                path,
                "the torn last" if torn else "corrupt",
                number,
                len(line),
            )
    return records
