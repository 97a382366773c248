"""Open Interpreter-compatible chunk framing: a second encoding of whole messages.

Each message becomes a start chunk, one or more content chunks, and an end chunk::

    {"role": "assistant", "type": "code", "format": "python", "start": True, "id": "..."}
    {"role": "assistant", "type": "code", "format": "python", "content": "print("}
    {"role": "assistant", "type": "code", "format": "python", "content": "1)"}
    {"role": "assistant", "type": "code", "format": "python", "end": True}

Every chunk carries the message's ``role`` and ``type``, and its ``format`` when
it has one. The start chunk also carries ``id``, ``in_reply_to``, ``created_at``
and ``extras`` when they are set. Text content may be split into pieces of at
most ``max_chunk`` characters (0: one piece); other content (an ``active_line``
number or null) is always exactly one chunk. :class:`ChunkAssembler` decodes
the chunks back into :class:`~lmc_runtime.messages.Message` objects, exactly.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

from .errors import MessageError
from .messages import Message, parse_message

__all__ = ["ChunkAssembler", "aiter_chunks", "from_chunks", "iter_chunks", "to_chunks"]

_HEADER_KEYS = ("role", "type", "format")
_START_KEYS = ("id", "in_reply_to", "created_at", "extras")


def _header(message: Message) -> dict[str, Any]:
    header: dict[str, Any] = {"role": message.role, "type": message.type}
    if message.format is not None:
        header["format"] = message.format
    return header


def to_chunks(message: Message, max_chunk: int = 0) -> Iterator[dict[str, Any]]:
    """The start, content and end chunks of ``message``."""
    if max_chunk < 0:
        raise ValueError(f"max_chunk must be >= 0, not {max_chunk}")
    header = _header(message)
    start = {**header, "start": True}
    for key in _START_KEYS:
        value = getattr(message, key)
        if value is not None:
            start[key] = value
    yield start
    content = message.content
    if isinstance(content, str) and max_chunk and len(content) > max_chunk:
        for i in range(0, len(content), max_chunk):
            yield {**header, "content": content[i : i + max_chunk]}
    else:
        yield {**header, "content": content}
    yield {**header, "end": True}


def iter_chunks(messages: Iterable[Message], max_chunk: int = 0) -> Iterator[dict[str, Any]]:
    """The chunks of every message in ``messages``, in order."""
    for message in messages:
        yield from to_chunks(message, max_chunk)


async def aiter_chunks(
    messages: AsyncIterable[Message], max_chunk: int = 0
) -> AsyncIterator[dict[str, Any]]:
    """The chunks of every message of an async stream, in order."""
    async for message in messages:
        for chunk in to_chunks(message, max_chunk):
            yield chunk


class ChunkAssembler:
    """Decodes chunks into messages; after an error, the open message is dropped."""

    def __init__(self) -> None:
        self._start: dict[str, Any] | None = None
        self._pieces: list[Any] = []

    @property
    def open(self) -> bool:
        """Whether a message has started and not yet ended."""
        return self._start is not None

    def feed(self, chunk: Mapping[str, Any]) -> Message | None:
        """Take one chunk; the whole message at its end chunk, else None."""
        try:
            return self._feed(chunk)
        except MessageError:
            self._start, self._pieces = None, []
            raise

    def _feed(self, chunk: Mapping[str, Any]) -> Message | None:
        if not isinstance(chunk, Mapping):
            raise MessageError(f"a chunk must be a JSON object, not {type(chunk).__name__}")
        kinds = [k for k in ("start", "content", "end") if k in chunk]
        if len(kinds) != 1 or chunk.get(kinds[0]) is False:
            raise MessageError(
                f"a chunk needs exactly one of 'start', 'content' or 'end', got {kinds or 'none'}"
            )
        kind = kinds[0]
        if kind == "start":
            if self._start is not None:
                raise MessageError(f"start chunk while message {self._describe()} is still open")
            self._start = {k: v for k, v in chunk.items() if k != "start"}
            return None
        if self._start is None:
            raise MessageError(f"{kind} chunk without a start chunk")
        for key in _HEADER_KEYS:
            if chunk.get(key) != self._start.get(key):
                raise MessageError(
                    f"{kind} chunk has {key} {chunk.get(key)!r} but the open message "
                    f"has {key} {self._start.get(key)!r}"
                )
        if kind == "content":
            self._pieces.append(chunk["content"])
            return None
        data, pieces = self._start, self._pieces
        self._start, self._pieces = None, []
        if len(pieces) > 1 and not all(isinstance(p, str) for p in pieces):
            raise MessageError("content split over several chunks must be text in every chunk")
        if len(pieces) == 1:
            data["content"] = pieces[0]
        elif pieces:
            data["content"] = "".join(pieces)
        return parse_message(data)

    def _describe(self) -> str:
        assert self._start is not None
        return "/".join(str(self._start.get(k)) for k in _HEADER_KEYS if k in self._start)


def from_chunks(chunks: Iterable[Mapping[str, Any]]) -> Iterator[Message]:
    """The messages framed by ``chunks``; raises MessageError if one is left open."""
    assembler = ChunkAssembler()
    for chunk in chunks:
        message = assembler.feed(chunk)
        if message is not None:
            yield message
    if assembler.open:
        raise MessageError("the chunks ended inside a message (no end chunk)")
