"""The line protocol between the runtime and ``kernels/lmc-node/runner.js``.

Requests are JSON lines on the control FIFO; events are JSON lines on the
events FIFO (see the runner's header for the list). :class:`Decoder` turns the
bytes read from the events FIFO into typed events, joining consecutive output of
one stream so a flood of ``console.log`` lines becomes a few large chunks.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Decoder",
    "Done",
    "Event",
    "Exiting",
    "Line",
    "Output",
    "Ready",
    "decode_event",
    "encode_request",
]

logger = logging.getLogger(__name__)

#: Output joined into one event stops growing past this many characters.
_JOIN_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Output:
    """Text the code wrote; ``stream`` is ``"stdout"`` or ``"stderr"``."""

    stream: str
    text: str


@dataclass(frozen=True)
class Line:
    """The top-level statement of request ``request`` now running."""

    request: int
    line: int


@dataclass(frozen=True)
class Done:
    """Request ``request`` ended with ``status`` (ok, error, interrupted)."""

    request: int
    status: str
    pending: bool = False


@dataclass(frozen=True)
class Ready:
    """The runner is up and reads requests."""

    pid: int


@dataclass(frozen=True)
class Exiting:
    """The node process is exiting with ``code`` (``process.exit()``, or its end)."""

    code: int


Event = Output | Line | Done | Ready | Exiting

_STREAMS = {"o": "stdout", "e": "stderr"}
_STATUSES = frozenset({"ok", "error", "interrupted"})


def encode_request(request: int, code: str, *, lines: bool) -> bytes:
    """One request as the runner reads it: a JSON line."""
    return (json.dumps({"id": request, "code": code, "lines": lines}) + "\n").encode("utf-8")


def decode_event(raw: bytes) -> Event | None:
    """One event from one line, or None for a line that is not a known event."""
    try:
        data: Any = json.loads(raw)
        kind = data["k"]
        if kind in _STREAMS:
            return Output(_STREAMS[kind], str(data["d"]))
        if kind == "l":
            return Line(int(data["id"]), int(data["n"]))
        if kind == "d":
            status = str(data["s"])
            return Done(
                int(data["id"]), status if status in _STATUSES else "error", bool(data["p"])
            )
        if kind == "r":
            return Ready(int(data["pid"]))
        if kind == "x":
            return Exiting(int(data["c"]))
    except (ValueError, KeyError, TypeError):
        pass
    logger.warning("ignored an unreadable event from node: %r", raw[:200])
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
        size = 0
        stream = ""

        def flush() -> None:
            nonlocal size
            if parts:
                events.append(Output(stream, "".join(parts)))
                parts.clear()
                size = 0

        for raw in complete:
            event = decode_event(raw) if raw.strip() else None
            if event is None:
                continue
            if isinstance(event, Output):
                if event.stream != stream or size >= _JOIN_LIMIT:
                    flush()
                    stream = event.stream
                parts.append(event.text)
                size += len(event.text)
            else:
                flush()
                events.append(event)
        flush()
        return events
