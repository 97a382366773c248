"""The line protocol between the runtime and a runner: ``kernels/lmc-node/runner.js``,
``kernels/lmc-java/LmcJava.java``.

Requests are JSON lines on the control FIFO; events are JSON lines on the
events FIFO (the runners' headers list them). :class:`Decoder` turns what is
read there into events, joining consecutive output of one stream. Output that
reports an error (its traceback) names the error's class, ``{"k":"e","n":NAME,"d":TEXT}``,
and is joined only with output of that same error. The value of the code's last
expression comes as stdout of its own, ``{"k":"v","d":TEXT}`` (:attr:`Output.value`).
"""

from __future__ import annotations

import codecs
import json
import logging
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from ....replies import Status
from ..items import Finished, Line, Output
from ..lines import Lines

__all__ = [
    "LINE_LIMIT",
    "Decoder",
    "Event",
    "Exiting",
    "Keyed",
    "Reads",
    "Ready",
    "decode_event",
    "encode_request",
    "encode_stop",
]

logger = logging.getLogger(__name__)

#: The most of an unfinished event line held: every event but output is far shorter,
#: and output longer than this is decoded as it comes.
LINE_LIMIT = 64 * 1024
#: Output joined into one event stops growing past this many characters.
_JOIN_LIMIT = 64 * 1024
#: What a stopped run's notice adds when the code left async work behind.
PENDING_NOTE = " Promises and timers it started may still be running."


class Reads(NamedTuple):
    """The code reads its stdin, and nothing is there yet (a runner that says so)."""


class Keyed(NamedTuple):
    """An item (a line, a read, the end) of request ``request``."""

    request: int
    item: Line | Finished | Reads


class Ready(NamedTuple):
    """The runner (process ``pid``) is up and reads requests."""

    pid: int


class Exiting(NamedTuple):
    """Node is exiting with ``code`` (``process.exit()``, or its end)."""

    code: int


Event = Output | Keyed | Ready | Exiting

_STREAMS = {"o": "stdout", "e": "stderr"}
_STATUSES = {"ok": Status.OK, "error": Status.ERROR, "interrupted": Status.INTERRUPTED}


def encode_request(
    request: int, code: str, *, lines: bool, env: Mapping[str, str] | None = None
) -> bytes:
    """One request as the runner reads it: a JSON line; ``env`` is set for it only."""
    fields: dict[str, Any] = {"id": request, "code": code, "lines": lines}
    if env:
        fields["env"] = dict(env)
    return (json.dumps(fields) + "\n").encode("utf-8")


def encode_stop(request: int) -> bytes:
    """Stop request ``request`` if it is the one running; ignored otherwise."""
    return (json.dumps({"stop": request}) + "\n").encode("utf-8")


def _done(data: Any) -> Keyed:
    """A run's end; ``c`` counts the runner's runs, ``n`` names a failed run's error class."""
    status = _STATUSES.get(str(data["s"]), Status.ERROR)
    note = PENDING_NOTE if data["p"] else ""
    extras: dict[str, Any] = {}
    if isinstance(data.get("c"), int):
        extras["execution_count"] = data["c"]
    if status is Status.ERROR and isinstance(data.get("n"), str):
        extras["error"] = data["n"]
    return Keyed(int(data["id"]), Finished(status, extras, note))


def decode_event(raw: bytes) -> Event | None:
    """One event from one line, or None for a line that is not a known event."""
    try:
        data: Any = json.loads(raw)
        kind = data["k"]
        if kind in _STREAMS:
            error = data.get("n")
            return Output(str(data["d"]), _STREAMS[kind], error if isinstance(error, str) else None)
        if kind == "v":
            return Output(str(data["d"]), "stdout", value=True)
        if kind == "l":
            return Keyed(int(data["id"]), Line(int(data["n"])))
        if kind == "d":
            return _done(data)
        if kind == "i":
            return Keyed(int(data["id"]), Reads())
        if kind == "r":
            return Ready(int(data["pid"]))
        if kind == "x":
            return Exiting(int(data["c"]))
    except (ValueError, KeyError, TypeError):
        pass
    return None


class Decoder:
    """Bytes from the events FIFO in, events out, in order, holding a bounded amount.

    An output event too long to hold (one big write of the code) is decoded as it
    comes, in pieces; any other line too long to hold is not an event and is
    dropped, but for an event written at its end (once garbage that ends without a
    newline is followed by one of the runner's own events, that event is kept).
    """

    def __init__(self, limit: int = LINE_LIMIT) -> None:
        self._lines = Lines(limit)
        self._limit = limit
        self._text: _Text | None = None
        self._tail = b""
        self._warned = False

    @property
    def held(self) -> int:
        """How many bytes of an unfinished line are held now (bounded by the limit)."""
        return self._lines.held + len(self._tail) + (self._text.held if self._text else 0)

    def feed(self, data: bytes) -> list[Event]:
        """The complete events in ``data`` (plus what was left over last time)."""
        events: list[Event | None] = []
        for piece in self._lines.feed(data):
            if piece.first and piece.last:
                events.append(self._line(piece.data))
            elif piece.first:
                self._text = _Text.start(piece.data)
                if self._text is None:
                    self._tail = piece.data[-self._limit :]
                else:
                    events.append(self._text.feed(b"", end=False))
            elif self._text is not None:
                events.append(self._text.feed(piece.data, end=piece.last))
                if piece.last:
                    self._text = None
            else:
                self._tail = (self._tail + piece.data)[-self._limit :]
                if piece.last:
                    self._warn(
                        "dropped a line too long to be an event (over %d bytes)", self._limit
                    )
                    tail, self._tail = self._tail, b""
                    events.append(self._line(tail, whole=False))
        return _joined([event for event in events if event is not None])

    def _line(self, raw: bytes, *, whole: bool = True) -> Event | None:
        """The event in ``raw``; else the one at its end (garbage before it, no newline)."""
        event = decode_event(raw) if whole else None
        if event is None and raw.strip():
            start = raw.rfind(b'{"k":"')
            event = decode_event(raw[start:]) if start > 0 or (start == 0 and not whole) else None
            if whole:
                self._warn("ignored unreadable bytes from a runner: %r", raw[:200])
        return event

    def _warn(self, message: str, arg: object) -> None:
        """Once per decoder at WARNING (a flood of garbage is one complaint), then DEBUG."""
        level = logging.DEBUG if self._warned else logging.WARNING
        self._warned = True
        logger.log(level, message, arg)


_VALUE_HEAD = b'{"k":"v","d":"'
_HEADS = {b'{"k":"o","d":"': "stdout", b'{"k":"e","d":"': "stderr", _VALUE_HEAD: "stdout"}
#: The head of an output event that names an error: the name comes before the text.
_MARKED_HEAD = re.compile(rb'\{"k":"([oe])","n":("(?:[^"\\]|\\.){0,1000}"),"d":"')
#: An escape is at most 6 characters: never cut within one.
_ESCAPE = 6
_HIGH, _LOW, _LAST = "\ud800", "\udc00", "\udfff"


class _Text:
    """The string of an output event too long to hold, decoded piece by piece."""

    def __init__(self, stream: str, error: str | None = None, value: bool = False) -> None:
        self.stream = stream
        self.error = error
        self.value = value
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = ""
        #: A high surrogate escaped at the end of a piece, for the low one in the next.
        self._high = ""

    @classmethod
    def start(cls, head: bytes) -> _Text | None:
        """For a line starting ``head``, its decoder if it is an output event."""
        for prefix, stream in _HEADS.items():
            if head.startswith(prefix):
                text = cls(stream, value=prefix == _VALUE_HEAD)
                text._held = text._utf8.decode(head[len(prefix) :])
                return text
        marked = _MARKED_HEAD.match(head)
        if marked is None:
            return None
        try:
            error = json.loads(marked.group(2))
        except ValueError:
            return None
        text = cls(_STREAMS[marked.group(1).decode()], str(error))
        text._held = text._utf8.decode(head[marked.end() :])
        return text

    @property
    def held(self) -> int:
        return len(self._held)

    def feed(self, data: bytes, *, end: bool) -> Output | None:
        """The output decoded so far; at the ``end``, the line must close the event."""
        text = self._held + self._utf8.decode(data, final=end)
        if end:
            body, self._held = text.removesuffix('"}'), ""
        else:
            cut = _boundary(text, len(text) - 2)  # the closing '"}' is never output
            body, self._held = text[:cut], text[cut:]
        try:
            decoded = self._high + json.loads('"' + body + '"', strict=False)
        except ValueError:
            logger.warning("ignored an unreadable piece of output from a runner: %r", body[:200])
            return None
        self._high = ""
        if len(decoded) > 1 and _HIGH <= decoded[0] < _LOW <= decoded[1] <= _LAST:
            pair = 0x10000 + ((ord(decoded[0]) - 0xD800) << 10) + ord(decoded[1]) - 0xDC00
            decoded = chr(pair) + decoded[2:]
        if not end and decoded and _HIGH <= decoded[-1] < _LOW:  # "\\ud83d" cut from "\\ude00"
            self._high, decoded = decoded[-1], decoded[:-1]
        return Output(decoded, self.stream, self.error, self.value) if decoded else None


def _boundary(text: str, cut: int) -> int:
    """Where at or before ``cut`` the JSON string body ``text`` (whose start is not
    within an escape) may be cut: never within an escape, nor far before ``cut``.

    An escape starting before the last few characters is whole; in a run of
    backslashes, every other one (from the run's start) starts an escape.
    """
    cut = max(0, cut)
    first = text.find("\\", max(0, cut - _ESCAPE), cut)
    if first < 0:
        return cut
    run = len(text[:first].rstrip("\\"))
    return first + (first - run) % 2


def _joined(events: list[Event]) -> list[Event]:
    """``events`` with consecutive output of one stream and error mark joined (up to a size)."""
    joined: list[Event] = []
    parts: list[str] = []
    first: Output | None = None
    size = 0
    for event in events:
        if (
            isinstance(event, Output)
            and first is not None
            and (event.stream, event.error, event.value) == (first.stream, first.error, first.value)
            and size < _JOIN_LIMIT
        ):
            parts.append(event.text)
            size += len(event.text)
            continue
        if first is not None:
            joined.append(Output("".join(parts), first.stream, first.error, first.value))
            parts, first, size = [], None, 0
        if isinstance(event, Output):
            parts, first, size = [event.text], event, len(event.text)
        else:
            joined.append(event)
    if first is not None:
        joined.append(Output("".join(parts), first.stream, first.error, first.value))
    return joined
