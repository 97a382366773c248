"""The plain display (``--plain``, ``NO_COLOR``) and the raw one (``--jsonl``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from ..messages import Message
from .images import ImageStore
from .view import RunDisplay

__all__ = ["JsonlRun", "JsonlView", "PlainRun", "PlainView", "json_line"]


def json_line(data: Any) -> str:
    """``data`` as one line of JSON (lone surrogates escaped, never an error)."""
    try:
        line = json.dumps(data, ensure_ascii=False)
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(data)
    return line + "\n"


def _put(stream: IO[str], text: str) -> None:
    stream.write(text)
    stream.flush()


class PlainRun:
    """One execution as plain text: output as it comes, files for images."""

    def __init__(self, out: IO[str], images: ImageStore) -> None:
        self.out = out
        self.images = images
        self._at_line_start = True
        self._last_note: str | None = None

    def _write(self, text: str) -> None:
        if text:
            _put(self.out, text)
            self._at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        self._write(("" if self._at_line_start else "\n") + text + "\n")

    def add(self, message: Message) -> None:
        kind = (message.type, message.format)
        if kind == ("console", "output"):
            self._write(str(message.content))
        elif kind == ("console", "active_line"):
            return
        elif kind == ("code", "html"):
            self._save(lambda: self.images.save_html(str(message.content)), "html")
        elif message.type == "image":
            self._save(
                lambda: self.images.save_image(str(message.content), message.format), "image"
            )
        else:
            self._line(f"[{message.type}/{message.format}] {message.content}")

    def _save(self, save: Any, what: str) -> None:
        try:
            path = save()
        except OSError as exc:
            self._line(f"[{what} could not be saved: {exc}]")
            return
        self._line(f"[{what}] {path}")

    def note(self, text: str) -> None:
        if text != self._last_note:  # Ctrl-C pressed again says nothing new
            self._last_note = text
            self._line(text)

    def suspend(self) -> None:
        if not self._at_line_start:
            self._write("\n")

    def resume(self) -> None:
        return

    def close(self) -> None:
        if not self._at_line_start:
            self._write("\n")


class PlainView:
    """Text without colours or cursor movement."""

    def __init__(self, out: IO[str], images: ImageStore) -> None:
        self.out = out
        self.images = images

    def begin(self, request: Mapping[str, Any], language: str, code: str) -> RunDisplay:
        return PlainRun(self.out, self.images)

    def info(self, text: str) -> None:
        _put(self.out, text + "\n")

    def error(self, text: str) -> None:
        _put(self.out, f"error: {text}\n")


class JsonlRun:
    """One execution as raw LMC messages, one JSON object a line."""

    def __init__(self, out: IO[str], notes: IO[str]) -> None:
        self.out = out
        self.notes = notes

    def add(self, message: Message) -> None:
        _put(self.out, json_line(message.to_dict()))

    def note(self, text: str) -> None:
        _put(self.notes, text + "\n")

    def suspend(self) -> None:
        return

    def resume(self) -> None:
        return

    def close(self) -> None:
        return


class JsonlView:
    """Every message of the session (the assistant's too) as JSON lines on ``out``.

    The REPL's own remarks go to ``notes`` (stderr), so ``out`` stays pure JSONL.
    """

    def __init__(self, out: IO[str], notes: IO[str]) -> None:
        self.out = out
        self.notes = notes

    def begin(self, request: Mapping[str, Any], language: str, code: str) -> RunDisplay:
        _put(self.out, json_line(dict(request)))
        return JsonlRun(self.out, self.notes)

    def info(self, text: str) -> None:
        _put(self.notes, text + "\n")

    def error(self, text: str) -> None:
        _put(self.notes, f"error: {text}\n")
