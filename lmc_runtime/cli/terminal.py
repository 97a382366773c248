"""``lmc run`` for people: a batch shown the way a REPL would show it, in plain text.

Each run prints its code under its language, then its output as it streams. The
line running shows as a transient ``(line N)`` that the next output erases (only
on a terminal that can erase a line). Images and HTML are saved to files whose
paths are printed instead of their base64; a run that did not end ``ok`` ends
with its status in brackets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from ..messages import Message
from .files import OutputFiles

__all__ = ["TerminalSink"]

#: Code lines shown per run, and characters per code line (the rest is elided).
CODE_LINES = 30
CODE_CHARS = 200
#: Characters of a message of an unexpected kind shown inline.
OTHER_CHARS = 200

_ERASE = "\r\x1b[2K"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _code_lines(language: str, code: str) -> list[str]:
    lines = code.rstrip("\n").split("\n")
    prompt = f"{language}> "
    shown = [
        (prompt if n == 0 else " " * (len(prompt) - 2) + "| ") + _clip(line, CODE_CHARS)
        for n, line in enumerate(lines[:CODE_LINES])
    ]
    if len(lines) > CODE_LINES:
        shown.append(f"{' ' * (len(prompt) - 2)}| … {len(lines) - CODE_LINES} more lines")
    return shown


def _ending(message: Message, error: str | None) -> str | None:
    """``[status: details]`` for a run that did not end ok, else None; ``error`` names
    the exception its output reported, if any."""
    status = message.status
    if status in (None, "ok"):
        return None
    extras = message.extras or {}
    details = [error] if error else []
    if isinstance(extras.get("exit_code"), int):
        details.append(f"exit code {extras['exit_code']}")
    if extras.get("state_lost") is True:
        details.append("state lost")
    return _clip(f"[{status}{': ' if details else ''}{', '.join(details)}]", OTHER_CHARS)


class TerminalSink:
    """Replies as text for people on ``out``; images and HTML saved as files in
    ``output_dir`` (None: a new temporary folder), whose path is said once."""

    def __init__(self, out: IO[str], output_dir: Path | None, *, live: bool) -> None:
        self.out = out
        self.files = OutputFiles(output_dir, announce=self.note)
        self.live = live  # the terminal can erase a line: show the running line
        self._at_line_start = True
        self._indicator: int | None = None
        self._runs = 0
        self._error: str | None = None  # the exception the running code's output named

    def _clear(self) -> None:
        if self._indicator is not None:
            self.out.write(_ERASE)
            self.out.flush()
            self._indicator = None

    def _put(self, text: str) -> None:
        if not text:
            return
        self._clear()
        self.out.write(text)
        self.out.flush()
        self._at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        self._put(("" if self._at_line_start else "\n") + text + "\n")

    def note(self, text: str) -> None:
        self._line(text)

    def show(self, request: Any, stream: Iterable[Message]) -> None:
        if isinstance(request, Mapping):
            language, code = request.get("format"), request.get("content")
            if self._runs:
                self._line("")
            self._runs += 1
            if isinstance(language, str) and isinstance(code, str):
                for line in _code_lines(_clip(language, 20), code):
                    self._line(line)
        try:
            for message in stream:
                self._add(message)
        finally:  # Ctrl-C too: leave no "(line N)" and no half line behind
            self._clear()
            self._put("" if self._at_line_start else "\n")

    def _add(self, message: Message) -> None:
        kind = (message.type, message.format)
        if kind == ("console", "output"):
            error = (message.extras or {}).get("error")
            self._error = error if isinstance(error, str) else self._error
            self._put(str(message.content))
        elif kind == ("console", "active_line"):
            if isinstance(message.content, int):
                self._running(message.content)
                return
            ending, self._error = _ending(message, self._error), None
            if ending is not None:
                self._line(ending)
        elif message.type == "image":
            self._saved(
                "image",
                lambda: self.files.save_image(
                    str(message.content), message.format, message.in_reply_to
                ),
            )
        elif kind == ("code", "html"):
            self._saved(
                "html", lambda: self.files.save_html(str(message.content), message.in_reply_to)
            )
        else:
            self._line(_clip(f"[{message.type}/{message.format}] {message.content}", OTHER_CHARS))

    def _running(self, line: int) -> None:
        """Show ``(line N)`` in place of the last such note, on an empty line only."""
        if not self.live or not self._at_line_start or line == self._indicator:
            return
        self.out.write(f"{_ERASE if self._indicator is not None else ''}(line {line})")
        self.out.flush()
        self._indicator = line

    def _saved(self, what: str, save: Callable[[], str]) -> None:
        try:
            where = save()
        except OSError as exc:
            self._line(_clip(f"[{what} not saved: {exc}]", OTHER_CHARS))
            return
        self._line(f"[{what}] {where}")
