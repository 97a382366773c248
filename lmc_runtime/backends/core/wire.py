"""The line protocol between the runtime and a runner: ``kernels/lmc-node/runner.js``,
``kernels/lmc-java/LmcJava.java``.

Requests are JSON lines on the control FIFO; events are JSON lines on the
events FIFO (the runners' headers list them). :class:`Decoder` turns what is
read there into events, joining consecutive output of one stream.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, NamedTuple

from ...replies import Status
from ..core import Finished, Line, Output

__all__ = [
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
    status = _STATUSES.get(str(data["s"]), Status.ERROR)
    note = PENDING_NOTE if data["p"] else ""
    return Keyed(int(data["id"]), Finished(status, note=note))


def decode_event(raw: bytes) -> Event | None:
    """One event from one line, or None for a line that is not a known event."""
    try:
        data: Any = json.loads(raw)
        kind = data["k"]
        if kind in _STREAMS:
            return Output(str(data["d"]), _STREAMS[kind])
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
    logger.warning("ignored an unreadable event from a runner: %r", raw[:200])
    return None


class Decoder:
    """Bytes from the events FIFO in, events out, in order."""

    def __init__(self) -> None:
        self._partial = b""

    def feed(self, data: bytes) -> list[Event]:
        """The complete events in ``data`` (plus what was left over last time)."""
        *complete, self._partial = (self._partial + data).split(b"\n")
        events: list[Event] = []
        parts: list[str] = []
        stream = ""
        size = 0
        for raw in complete:
            event = decode_event(raw) if raw.strip() else None
            if event is None:
                continue
            if isinstance(event, Output) and event.stream == stream and size < _JOIN_LIMIT:
                parts.append(event.text)
                size += len(event.text)
                continue
            if parts:
                events.append(Output("".join(parts), stream))
                parts, stream, size = [], "", 0
            if isinstance(event, Output):
                parts, stream, size = [event.text], event.stream, len(event.text)
            else:
                events.append(event)
        if parts:
            events.append(Output("".join(parts), stream))
        return events
