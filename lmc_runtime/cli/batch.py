"""A batch of LMC messages as JSON lines: each line read, bounded, and run in order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO, Any, Protocol

from .. import replies
from ..arguments import MessageInput
from ..errors import MessageError
from ..intake import read_json_object
from ..messages import Message, parse_message
from ..replies import Status

__all__ = [
    "MAX_LINE_BYTES",
    "NOT_UNDERSTOOD",
    "Runner",
    "Sink",
    "read_lines",
    "requests",
    "run_batch",
]

#: ``lmc run`` answers a longer input line with "not understood" instead of reading it.
MAX_LINE_BYTES = 16 << 20

#: The statuses of a reply saying a line could not run at all.
NOT_UNDERSTOOD = frozenset({Status.MALFORMED, Status.NOT_UNDERSTOOD, Status.UNAVAILABLE})


class Runner(Protocol):
    """What runs a batch: a ``Computer``, or a ``RemoteComputer`` (``--remote``)."""

    def run(self, message: MessageInput, code: str | None = None) -> Iterator[Message]:
        """The replies to one message, as they come."""


class Sink(Protocol):
    """Where a batch's replies go: JSON lines, chunks, or text for people."""

    def show(self, request: Any, stream: Iterable[Message]) -> None:
        """Write the replies to ``request`` (None: a reply made without a request)."""

    def note(self, text: str) -> None:
        """Say something about the batch itself (not a reply)."""


def read_lines(source: IO[bytes], limit: int) -> Iterator[bytes | None]:
    """Each line of ``source``; None for one longer than ``limit`` bytes, which is skipped
    in pieces so it never sits in memory whole."""
    while line := source.readline(limit + 1):
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        while (rest := source.readline(1 << 20)) and not rest.endswith(b"\n"):
            pass
        yield None


def requests(
    lines: Iterable[bytes | None], limit: int = MAX_LINE_BYTES
) -> Iterator[tuple[Any, Message | None]]:
    """Each input line as (what to send to the computer, or None to pass over it).

    A line that cannot be read as a message object gets its not-understood reply here,
    whatever it holds: one reply per line, and the batch goes on.
    """
    for number, raw in enumerate(lines, 1):
        if raw is not None and not raw.strip():
            continue
        try:
            if raw is None:
                raise MessageError(f"is longer than {limit} bytes")
            data = read_json_object(raw)
        except MessageError as exc:
            reason = f"line {number} {exc.reason}"
            yield None, replies.not_understood(reason, None, status="malformed")
            continue
        try:
            message = parse_message(data)
        except Exception:
            yield data, None  # malformed: the computer answers "not understood"
            continue
        if message.role == "assistant" and message.type == "code":
            yield data, None
        # Other well-formed messages are conversation context: nothing to run.


class _Tally:
    """Counts the replies saying a line was not understood, as they pass."""

    def __init__(self) -> None:
        self.not_understood = 0

    def watch(self, stream: Iterable[Message]) -> Iterator[Message]:
        for message in stream:
            if message.status in NOT_UNDERSTOOD:
                self.not_understood += 1
            yield message


def run_batch(computer: Runner, items: Iterable[tuple[Any, Message | None]], sink: Sink) -> int:
    """Run every request of ``items`` in ``computer``; return how many lines were not
    understood (malformed, not runnable, an unknown or unavailable language)."""
    tally = _Tally()
    for request, reply in items:
        stream: Iterable[Message] = [reply] if reply is not None else computer.run(request)
        sink.show(None if reply is not None else request, tally.watch(stream))
    return tally.not_understood
