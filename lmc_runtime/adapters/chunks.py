"""Open Interpreter's chunk framing: start and end flags around streamed messages.

A stream of messages (:func:`iter_chunks`, :func:`aiter_chunks`) is framed
exactly as Open Interpreter 0.4.3 frames its own stream
(``OpenInterpreter._respond_and_store`` in ``interpreter/core/core.py``):

- each message is one content chunk, the message itself (``Message.to_dict()``,
  as OI yields its chunks whole); a message whose content is ``""`` is left
  out, flags and all;
- a start flag opens a run of messages with the same role and type (and the
  same format, except for ``console``), and an end flag closes it when the next
  message does not belong to it, or when the stream is over. The flags carry
  only ``role``, ``type`` and ``format``, and never a format for ``console``:
  ``active_line`` and ``output`` messages share one pair of flags::

    {"role": "computer", "type": "console", "start": True}
    {"role": "computer", "type": "console", "format": "active_line", "content": 1, ...}
    {"role": "computer", "type": "console", "format": "output", "content": "hi\\n", ...}
    {"role": "computer", "type": "console", "format": "active_line", "content": None, ...}
    {"role": "computer", "type": "console", "end": True}

OI's ``confirmation`` chunk has no LMC message: this runtime runs code without
asking, as OI does with ``auto_run``, which drops it too.

:func:`to_chunks` frames one message on its own: a start chunk with its
``id``, ``in_reply_to``, ``conversation_id``, ``created_at`` and ``extras``, its content (text split
into pieces of at most ``max_chunk`` characters, 0: one piece; other content is
exactly one chunk), and an end chunk. That is what a client sends OI.

:class:`ChunkAssembler` decodes both framings back into messages: the content
chunks of one start/end pair are one message, except that a content chunk with
another format, or with fields of its own (``id``...) that differ from the
message being assembled, begins the next one. Messages framed by
:func:`to_chunks` come back exactly, and so do those of :func:`iter_chunks`
that carry an ``id``; consecutive messages of one format with no fields to
tell them apart are joined, as OI itself joins them.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

from ..errors import MessageError
from ..messages import Message, parse_message

__all__ = ["ChunkAssembler", "aiter_chunks", "from_chunks", "iter_chunks", "to_chunks"]

_HEADER_KEYS = ("role", "type", "format")
_START_KEYS = ("id", "in_reply_to", "conversation_id", "created_at", "extras")


def _header(message: Message) -> dict[str, Any]:
    header: dict[str, Any] = {"role": message.role, "type": message.type}
    if message.format is not None:
        header["format"] = message.format
    return header


def _pieces(content: Any, max_chunk: int) -> list[Any]:
    if max_chunk < 0:
        raise ValueError(f"max_chunk must be >= 0, not {max_chunk}")
    if isinstance(content, str) and max_chunk and len(content) > max_chunk:
        return [content[i : i + max_chunk] for i in range(0, len(content), max_chunk)]
    return [content]


def to_chunks(message: Message, max_chunk: int = 0) -> Iterator[dict[str, Any]]:
    """The start, content and end chunks of ``message`` on its own."""
    header = _header(message)
    pieces = _pieces(message.content, max_chunk)
    start = {**header, "start": True}
    for key in _START_KEYS:
        value = getattr(message, key)
        if value is not None:
            start[key] = value
    yield start
    for piece in pieces:
        yield {**header, "content": piece}
    yield {**header, "end": True}


class _Framer:
    """OI 0.4.3's flags around a stream of messages (``_respond_and_store``)."""

    def __init__(self, max_chunk: int) -> None:
        _pieces("", max_chunk)  # refuses a negative max_chunk at once
        self.max_chunk = max_chunk
        self.flag_base: dict[str, Any] | None = None

    def chunks(self, message: Message) -> list[dict[str, Any]]:
        chunk = message.to_dict()
        if chunk["content"] == "":
            return []
        out = []
        base = self.flag_base
        if not (
            base is not None
            and base["role"] == chunk["role"]
            and base["type"] == chunk["type"]
            and ("format" not in base or chunk.get("format") == base["format"])
        ):
            out.extend(self.close())
            base = {"role": chunk["role"], "type": chunk["type"]}
            # OI: "Don't add format to type: console flags, to accommodate
            # active_line AND output formats".
            if "format" in chunk and chunk["type"] != "console":
                base["format"] = chunk["format"]
            self.flag_base = base
            out.append({**base, "start": True})
        out.extend({**chunk, "content": p} for p in _pieces(chunk["content"], self.max_chunk))
        return out

    def close(self) -> list[dict[str, Any]]:
        base, self.flag_base = self.flag_base, None
        return [] if base is None else [{**base, "end": True}]


def iter_chunks(messages: Iterable[Message], max_chunk: int = 0) -> Iterator[dict[str, Any]]:
    """The chunks of a stream of messages, framed as Open Interpreter 0.4.3 frames
    its own (see the module docstring). ``max_chunk`` splits long text into
    several content chunks of the same message."""
    framer = _Framer(max_chunk)
    for message in messages:
        yield from framer.chunks(message)
    yield from framer.close()


async def aiter_chunks(
    messages: AsyncIterable[Message], max_chunk: int = 0
) -> AsyncIterator[dict[str, Any]]:
    """:func:`iter_chunks` of an async stream, chunk by chunk as it comes."""
    framer = _Framer(max_chunk)
    async for message in messages:
        for chunk in framer.chunks(message):
            yield chunk
    for chunk in framer.close():
        yield chunk


class ChunkAssembler:
    """Decodes chunks into messages; after an error, the open start/end pair is dropped."""

    def __init__(self) -> None:
        self._start: dict[str, Any] | None = None
        self._message: dict[str, Any] | None = None  # the one being assembled
        self._pieces: list[Any] = []

    @property
    def open(self) -> bool:
        """Whether a start chunk came and its end chunk has not."""
        return self._start is not None

    def feed(self, chunk: Mapping[str, Any]) -> Message | None:
        """Take one chunk; a message as soon as it is whole (at the end chunk, or
        when the next message of the same start/end pair begins), else None."""
        try:
            return self._feed(chunk)
        except MessageError:
            self._start, self._message, self._pieces = None, None, []
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
        # OI's console flags carry no format: each content chunk has its own.
        free_format = self._start.get("type") == "console" and "format" not in self._start
        for key in _HEADER_KEYS:
            if key == "format" and kind == "content" and free_format:
                continue
            if chunk.get(key) != self._start.get(key):
                raise MessageError(
                    f"{kind} chunk has {key} {chunk.get(key)!r} but the open message "
                    f"has {key} {self._start.get(key)!r}"
                )
        if kind == "content":
            return self._content(chunk)
        done = self._finish() if self._message is not None else parse_message(self._start)
        self._start = None
        return done

    def _content(self, chunk: Mapping[str, Any]) -> Message | None:
        assert self._start is not None
        fields = {k: chunk[k] for k in _START_KEYS if k in chunk}
        current = self._message
        # A content chunk with fields of its own is a whole message (OI's framing):
        # absent fields are unset. One without any continues the message.
        if (
            current is not None
            and chunk.get("format") == current.get("format")
            and (not fields or all(current.get(k) == fields.get(k) for k in _START_KEYS))
        ):
            self._pieces.append(chunk["content"])
            return None
        done = self._finish() if current is not None else None
        if current is None:  # the first message takes the start chunk's fields
            self._message = {**self._start, **fields}
        else:
            self._message = {k: v for k, v in self._start.items() if k in _HEADER_KEYS}
            self._message.update(fields)
        if "format" in chunk:
            self._message["format"] = chunk["format"]
        self._pieces = [chunk["content"]]
        return done

    def _finish(self) -> Message:
        assert self._message is not None
        data, pieces = self._message, self._pieces
        self._message, self._pieces = None, []
        if len(pieces) > 1 and not all(isinstance(p, str) for p in pieces):
            raise MessageError("content split over several chunks must be text in every chunk")
        data["content"] = pieces[0] if len(pieces) == 1 else "".join(pieces)
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
