"""The logs of ``lmc serve``: text or JSON lines on stderr, with tokens redacted.

JSON lines are objects with ``time``, ``level``, ``logger`` and ``message``,
and for access lines ``method``, ``path``, ``status``, ``duration_ms`` and
``client`` (:mod:`.access`). Whatever the format, a ``token=`` or ``signature=`` in a query
and the service's own token are replaced by ``[redacted]``; an E2B sandbox's
id and access token (bearer capabilities, :func:`hide`) are shortened or
replaced, in the message and in its traceback alike. A text line can
never be forged by what a client sent (a path with an encoded newline): every
line of a record after its first is indented, and other control characters are
escaped.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import sys
from collections.abc import Sequence
from typing import TextIO

__all__ = [
    "ACCESS_FIELDS",
    "JsonFormatter",
    "Redactor",
    "TextFormatter",
    "configure_logging",
    "hide",
    "hide_sandbox_ids",
    "redact_query",
    "unhide",
]

#: The fields of an access line (the ``extra`` of its record).
ACCESS_FIELDS = ("method", "path", "status", "duration_ms", "client")

#: A credential in a query: ``token=`` (the WebSocket's), ``signature=`` (a signed
#: E2B files URL, which opens a file to whoever holds it).
_TOKEN_IN_QUERY = re.compile(r"((?:^|[?&;\s])(?:token|signature)=)[^&;\s\"']*", re.IGNORECASE)
_REDACTED = "[redacted]"
#: uvicorn says this after a failed start, which ``lmc serve`` reports itself.
_STARTUP_FAILED = "Application startup failed. Exiting."


#: An E2B sandbox id in a control-plane path: all but its first six characters go.
_SANDBOX_ID_IN_PATH = re.compile(r"(/sandboxes/[a-z2-7]{6})[a-z2-7]{26}")

#: Secrets of the moment (live sandboxes' ids and tokens), with what shows instead.
_hidden: dict[str, str] = {}


def redact_query(text: str) -> str:
    """``text`` with the value of every ``token=`` and ``signature=`` parameter replaced."""
    return _TOKEN_IN_QUERY.sub(r"\1" + _REDACTED, text)


def hide_sandbox_ids(text: str) -> str:
    """``text`` with each E2B sandbox id in a ``/sandboxes/<id>`` path shortened."""
    return _SANDBOX_ID_IN_PATH.sub("\\1\u2026", text)


def hide(secret: str, shown: str = _REDACTED) -> None:
    """Write ``shown`` for ``secret`` in every log record until :func:`unhide`."""
    if secret:
        _hidden[secret] = shown


def unhide(secret: str) -> None:
    _hidden.pop(secret, None)


def _scrubbed(text: str, secrets: Sequence[str]) -> str:
    cleaned = hide_sandbox_ids(redact_query(text))
    for secret in secrets:
        cleaned = cleaned.replace(secret, _REDACTED)
    for secret, shown in tuple(_hidden.items()):
        if secret in cleaned:
            cleaned = cleaned.replace(secret, shown)
    return cleaned


class Redactor(logging.Filter):
    """Rewrites each record's message without the tokens in it; drops uvicorn's
    own report of a failed start."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        super().__init__()
        self._secrets = [secret for secret in secrets if secret]

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.name == "uvicorn.error" and message == _STARTUP_FAILED:
            return False
        cleaned = _scrubbed(message, self._secrets)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = _scrubbed(record.exc_text, self._secrets)
        return True


#: What formats a record's traceback, for the redactor to clean it before a
#: formatter shows it (formatters show ``exc_text`` when it is set).
_TRACEBACKS = logging.Formatter()


class JsonFormatter(logging.Formatter):
    """One JSON object a line."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
        line: dict[str, object] = {
            "time": when.isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in ACCESS_FIELDS:
            if hasattr(record, name):
                line[name] = getattr(record, name)
        if record.exc_text:
            line["exception"] = record.exc_text
        elif record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: C0 controls but tab and newline, DEL and the C1 controls (a terminal's escapes).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message``; a record is one line, its continuation
    lines (a kernel's log tail, a traceback) indented, so no text in it can
    pass for a record of its own."""

    def __init__(self) -> None:
        super().__init__(_TEXT)

    def format(self, record: logging.LogRecord) -> str:
        text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", super().format(record))
        return text.replace("\n", "\n  ")


def configure_logging(
    level: str, form: str, secrets: Sequence[str] = (), stream: TextIO | None = None
) -> logging.Handler:
    """Send every log record of ``level`` or above to ``stream`` (stderr) as
    ``form`` (``text`` or ``json``), replacing the handlers there were; the
    handler installed."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if form == "json" else TextFormatter())
    handler.addFilter(Redactor(secrets))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # uvicorn's life story (started, waiting for startup...) only when debugging.
    uvicorn_level = logging.DEBUG if level == "debug" else logging.WARNING
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).setLevel(uvicorn_level)
    return handler
