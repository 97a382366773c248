"""lmc_runtime.chunks: the shape of the start/content/end framing, exact round
trips, splitting with ``max_chunk``, and every error the decoder reports."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lmc_runtime.chunks import ChunkAssembler, aiter_chunks, from_chunks, iter_chunks, to_chunks
from lmc_runtime.errors import MessageError
from lmc_runtime.messages import Message

from .strategies import messages

CODE = Message(
    role="assistant",
    type="code",
    format="python",
    content="print('hi')",
    id="c1",
    created_at=1700000000.5,
    extras={"provider": {"index": 0}},
)
REPLY = Message(
    role="computer", type="console", format="output", content="hi\n", id="o1", in_reply_to="c1"
)
LINE = Message(role="computer", type="console", format="active_line", content=3, in_reply_to="c1")
DONE = Message(role="computer", type="console", format="active_line", content=None)
TEXT = Message(role="user", type="message", content="Hello")
PY = {"role": "assistant", "type": "code", "format": "python"}


def test_framing_of_a_message_with_every_optional_field() -> None:
    assert list(to_chunks(CODE)) == [
        {**PY, "start": True, "id": "c1", "created_at": 1700000000.5,
         "extras": {"provider": {"index": 0}}},
        {**PY, "content": "print('hi')"},
        {**PY, "end": True},
    ]  # fmt: skip


def test_framing_leaves_out_unset_fields_and_a_missing_format() -> None:
    assert list(to_chunks(TEXT)) == [
        {"role": "user", "type": "message", "start": True},
        {"role": "user", "type": "message", "content": "Hello"},
        {"role": "user", "type": "message", "end": True},
    ]


@pytest.mark.parametrize("message", [LINE, DONE])
@pytest.mark.parametrize("max_chunk", [0, 1])
def test_non_string_content_is_exactly_one_chunk(message: Message, max_chunk: int) -> None:
    contents = [c for c in to_chunks(message, max_chunk) if "content" in c]
    assert contents == [
        {"role": "computer", "type": "console", "format": "active_line", "content": message.content}
    ]


def test_empty_text_is_one_empty_content_chunk() -> None:
    message = Message(role="computer", type="console", format="output", content="")
    chunks = list(to_chunks(message, max_chunk=4))
    assert [c.get("content") for c in chunks] == [None, "", None]
    assert list(from_chunks(chunks)) == [message]


@pytest.mark.parametrize(
    ("max_chunk", "pieces"),
    [
        (0, ["abcdefg"]),
        (3, ["abc", "def", "g"]),
        (7, ["abcdefg"]),
        (100, ["abcdefg"]),
        (1, list("abcdefg")),
    ],
)
def test_max_chunk_splits_text_into_bounded_pieces(max_chunk: int, pieces: list[str]) -> None:
    message = Message(role="computer", type="console", format="output", content="abcdefg")
    chunks = list(to_chunks(message, max_chunk))
    assert [c["content"] for c in chunks[1:-1]] == pieces
    assert "start" in chunks[0] and "end" in chunks[-1]


def test_max_chunk_counts_characters_not_bytes() -> None:
    message = Message(role="user", type="message", content="日本語🙂é")
    pieces = [c["content"] for c in to_chunks(message, 2) if "content" in c]
    assert pieces == ["日本", "語🙂", "é"]


def test_negative_max_chunk_is_refused() -> None:
    with pytest.raises(ValueError, match="max_chunk"):
        list(to_chunks(TEXT, -1))


def test_round_trip_of_a_conversation() -> None:
    msgs = [TEXT, CODE, LINE, REPLY, DONE]
    for max_chunk in (0, 1, 5):
        assert list(from_chunks(iter_chunks(msgs, max_chunk))) == msgs


@given(st.lists(messages(), max_size=5), st.integers(min_value=0, max_value=20))
def test_round_trip_is_exact_for_any_valid_messages(msgs: list[Message], max_chunk: int) -> None:
    chunks = list(iter_chunks(msgs, max_chunk))
    assert len([c for c in chunks if c.get("start")]) == len(msgs)
    if max_chunk:
        assert all(
            len(c["content"]) <= max_chunk for c in chunks if isinstance(c.get("content"), str)
        )
    assert list(from_chunks(chunks)) == msgs


def test_aiter_chunks_matches_iter_chunks() -> None:
    msgs = [CODE, LINE, REPLY, DONE]

    async def source() -> AsyncIterator[Message]:
        for message in msgs:
            yield message

    async def collect() -> list[dict[str, Any]]:
        return [chunk async for chunk in aiter_chunks(source(), max_chunk=2)]

    assert anyio.run(collect) == list(iter_chunks(msgs, max_chunk=2))


def test_feed_returns_the_message_only_at_its_end_chunk() -> None:
    assembler = ChunkAssembler()
    results = [assembler.feed(c) for c in to_chunks(REPLY, max_chunk=1)]
    assert results[:-1] == [None] * (len(results) - 1)
    assert results[-1] == REPLY
    assert not assembler.open


def test_decodes_open_interpreter_style_chunks() -> None:
    chunks = [
        {**PY, "start": True},
        {**PY, "content": "import os\n"},
        {**PY, "content": "print(os.getcwd())"},
        {**PY, "end": True},
    ]
    code = "import os\nprint(os.getcwd())"
    assert list(from_chunks(chunks)) == [
        Message(role="assistant", type="code", format="python", content=code)
    ]


def test_a_message_without_content_chunks_has_null_content() -> None:
    header = {"role": "computer", "type": "console", "format": "active_line"}
    assert list(from_chunks([{**header, "start": True}, {**header, "end": True}])) == [
        Message(role="computer", type="console", format="active_line", content=None)
    ]


def _error(chunks: list[Any]) -> str:
    assembler = ChunkAssembler()
    with pytest.raises(MessageError) as info:
        for chunk in chunks:
            assembler.feed(chunk)
    assert not assembler.open, "after an error the open message is dropped"
    return info.value.reason


@pytest.mark.parametrize(
    ("chunks", "reason"),
    [
        ([{**PY, "content": "x"}], "content chunk without a start chunk"),
        ([{**PY, "end": True}], "end chunk without a start chunk"),
        (
            [{**PY, "start": True}, {**PY, "start": True}],
            "start chunk while message assistant/code/python is still open",
        ),
        (
            [{**PY, "start": True}, {**PY, "role": "computer", "content": "x"}],
            "content chunk has role 'computer' but the open message has role 'assistant'",
        ),
        (
            [{**PY, "start": True}, {**PY, "type": "console", "content": "x"}],
            "content chunk has type 'console' but the open message has type 'code'",
        ),
        (
            [{**PY, "start": True}, {**PY, "format": "shell", "content": "x"}],
            "content chunk has format 'shell' but the open message has format 'python'",
        ),
        (
            [{**PY, "start": True}, {"role": "assistant", "type": "code", "end": True}],
            "end chunk has format None but the open message has format 'python'",
        ),
        ([{**PY}], "a chunk needs exactly one of 'start', 'content' or 'end', got none"),
        ([{**PY, "start": True, "end": True}], "got ['start', 'end']"),
        ([{**PY, "start": False}], "a chunk needs exactly one of"),
        (["print(1)"], "a chunk must be a JSON object, not str"),
        (
            [
                {"role": "computer", "type": "console", "format": "active_line", "start": True},
                {"role": "computer", "type": "console", "format": "active_line", "content": 1},
                {"role": "computer", "type": "console", "format": "active_line", "content": 2},
                {"role": "computer", "type": "console", "format": "active_line", "end": True},
            ],
            "content split over several chunks must be text in every chunk",
        ),
        (
            [{**PY, "start": True, "colour": "red"}, {**PY, "content": ""}, {**PY, "end": True}],
            "colour: unknown field",
        ),
        (
            [{"role": "user", "type": "message", "start": True},
             {"role": "user", "type": "message", "content": 5},
             {"role": "user", "type": "message", "end": True}],
            "must be a string, not int",
        ),
    ],
)  # fmt: skip
def test_decoder_errors_give_a_precise_reason(chunks: list[Any], reason: str) -> None:
    assert reason in _error(chunks)


def test_assembler_recovers_after_an_error() -> None:
    assembler = ChunkAssembler()
    assembler.feed({**PY, "start": True})
    with pytest.raises(MessageError):
        assembler.feed({**PY, "format": "r", "content": "x"})
    assert [m for m in map(assembler.feed, to_chunks(CODE)) if m is not None] == [CODE]


def test_from_chunks_refuses_a_stream_that_ends_inside_a_message() -> None:
    chunks = list(iter_chunks([TEXT, CODE]))[:-1]
    decoded = from_chunks(chunks)
    assert next(decoded) == TEXT
    with pytest.raises(MessageError, match="ended inside a message"):
        next(decoded)
