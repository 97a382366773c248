"""The machine-readable sinks of ``lmc run``: JSON lines, and Open Interpreter chunks."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO, Any

from ..adapters.chunks import iter_chunks
from ..messages import Message

__all__ = ["ChunkSink", "JsonSink", "write_json"]


def write_json(out: IO[str], data: Any) -> None:
    """Write ``data`` as one JSON line and flush; lone surrogates come out escaped."""
    line = json.dumps(data, ensure_ascii=False)
    try:
        out.write(line + "\n")
    except UnicodeEncodeError:  # lone surrogates: escape them, still one valid JSON line
        out.write(json.dumps(data) + "\n")
    out.flush()


class JsonSink:
    """Every computer message as one JSON line on ``out``; notes go to ``notes``."""

    def __init__(self, out: IO[str], notes: IO[str]) -> None:
        self.out = out
        self.notes = notes

    def show(self, request: Any, stream: Iterable[Message]) -> None:
        for message in stream:
            write_json(self.out, message.to_dict())

    def note(self, text: str) -> None:
        self.notes.write(text + "\n")
        self.notes.flush()


class ChunkSink(JsonSink):
    """Each execution framed by ``start`` and ``end`` chunks, as Open Interpreter does."""

    def show(self, request: Any, stream: Iterable[Message]) -> None:
        for chunk in iter_chunks(stream):
            write_json(self.out, chunk)
