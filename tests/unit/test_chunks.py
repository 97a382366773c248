"""lmc_runtime.adapters.chunks: Open Interpreter 0.4.3's framing of a stream, the framing of
one message, exact round trips, splitting with ``max_chunk``, and every error the
decoder reports."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lmc_runtime.adapters.chunks import (
    ChunkAssembler,
    aiter_chunks,
    from_chunks,
    iter_chunks,
    to_chunks,
)
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


# -- Open Interpreter's framing of a stream ---------------------------------------
#
# These sequences mirror OpenInterpreter._respond_and_store in
# interpreter/core/core.py of open-interpreter 0.4.3: a start flag
# {role, type[, format]} when role, type or (except for console) format change,
# the chunk itself, an end flag before the next start and one after the last
# chunk; console flags carry no format; chunks whose content is "" are skipped.

CONSOLE = {"role": "computer", "type": "console"}
CONSOLE_START = {**CONSOLE, "start": True}
CONSOLE_END = {**CONSOLE, "end": True}


def _computer(format_: str, content: Any, id_: str, **extras: Any) -> Message:
    return Message(role="computer", type="console", format=format_, content=content, id=id_,
                   in_reply_to="c1", extras=extras or None)  # fmt: skip


def test_a_run_is_one_console_pair_with_the_final_active_line_inside() -> None:
    line = _computer("active_line", 1, "l1")
    out = _computer("output", "hi\n", "o1")
    err = _computer("output", "oops\n", "o2", stream="stderr")
    done = _computer("active_line", None, "l2", status="ok")
    assert list(iter_chunks([line, out, err, done])) == [
        CONSOLE_START,
        {**CONSOLE, "format": "active_line", "content": 1, "id": "l1", "in_reply_to": "c1"},
        {**CONSOLE, "format": "output", "content": "hi\n", "id": "o1", "in_reply_to": "c1"},
        {**CONSOLE, "format": "output", "content": "oops\n", "id": "o2", "in_reply_to": "c1",
         "extras": {"stream": "stderr"}},
        {**CONSOLE, "format": "active_line", "content": None, "id": "l2", "in_reply_to": "c1",
         "extras": {"status": "ok"}},
        CONSOLE_END,
    ]  # fmt: skip


def test_an_exchange_opens_a_pair_at_each_change_of_role_type_or_format() -> None:
    ask = Message(role="user", type="message", content="Plot it")
    say = Message(role="assistant", type="message", content="Sure.")
    code = Message(role="assistant", type="code", format="python", content="plot()")
    shell = Message(role="assistant", type="code", format="shell", content="ls")
    out = Message(role="computer", type="console", format="output", content="a\n")
    image = Message(role="computer", type="image", format="base64.png", content="AAAA")
    done = Message(role="computer", type="console", format="active_line", content=None)
    user = {"role": "user", "type": "message"}
    assistant = {"role": "assistant", "type": "message"}
    image_flag = {"role": "computer", "type": "image", "format": "base64.png"}
    assert list(iter_chunks([ask, say, code, shell, out, image, done])) == [
        {**user, "start": True}, {**user, "content": "Plot it"}, {**user, "end": True},
        {**assistant, "start": True}, {**assistant, "content": "Sure."}, {**assistant, "end": True},
        {**PY, "start": True}, {**PY, "content": "plot()"}, {**PY, "end": True},
        {"role": "assistant", "type": "code", "format": "shell", "start": True},
        {"role": "assistant", "type": "code", "format": "shell", "content": "ls"},
        {"role": "assistant", "type": "code", "format": "shell", "end": True},
        CONSOLE_START, {**CONSOLE, "format": "output", "content": "a\n"}, CONSOLE_END,
        {**image_flag, "start": True}, {**image_flag, "content": "AAAA"}, {**image_flag, "end": True},
        CONSOLE_START, {**CONSOLE, "format": "active_line", "content": None}, CONSOLE_END,
    ]  # fmt: skip


def test_messages_of_one_role_type_and_format_share_a_pair() -> None:
    first = Message(role="assistant", type="code", format="python", content="a = 1\n")
    second = Message(role="assistant", type="code", format="python", content="print(a)")
    words = [Message(role="assistant", type="message", content=w) for w in ("Hello", " there")]
    assert list(iter_chunks([first, second, *words])) == [
        {**PY, "start": True},
        {**PY, "content": "a = 1\n"},
        {**PY, "content": "print(a)"},
        {**PY, "end": True},
        {"role": "assistant", "type": "message", "start": True},
        {"role": "assistant", "type": "message", "content": "Hello"},
        {"role": "assistant", "type": "message", "content": " there"},
        {"role": "assistant", "type": "message", "end": True},
    ]


def test_empty_text_is_skipped_flags_and_all() -> None:
    empty_code = Message(role="assistant", type="code", format="python", content="")
    out = Message(role="computer", type="console", format="output", content="x")
    blank = Message(role="computer", type="console", format="output", content="")
    done = Message(role="computer", type="console", format="active_line", content=None)
    assert list(iter_chunks([empty_code])) == []
    assert list(iter_chunks([blank, out, blank, done])) == [
        CONSOLE_START,
        {**CONSOLE, "format": "output", "content": "x"},
        {**CONSOLE, "format": "active_line", "content": None},
        CONSOLE_END,
    ]


def test_max_chunk_splits_a_message_into_content_chunks_of_one_pair() -> None:
    out = _computer("output", "abcde", "o1")
    assert list(iter_chunks([out], max_chunk=2)) == [
        CONSOLE_START,
        *({**CONSOLE, "format": "output", "content": p, "id": "o1", "in_reply_to": "c1"}
          for p in ("ab", "cd", "e")),
        CONSOLE_END,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="max_chunk"):
        list(iter_chunks([out], -1))


def test_decoding_a_console_pair_splits_at_each_format_and_joins_unnamed_text() -> None:
    """As OI's own accumulator does: output pieces with nothing to tell them apart
    are one message; an active_line, or a piece with an id of its own, is another."""
    chunks = [
        CONSOLE_START,
        {**CONSOLE, "format": "output", "content": "a"},
        {**CONSOLE, "format": "output", "content": "b"},
        {**CONSOLE, "format": "output", "content": "c", "id": "o2"},
        {**CONSOLE, "format": "active_line", "content": None},
        CONSOLE_END,
    ]
    assert list(from_chunks(chunks)) == [
        Message(role="computer", type="console", format="output", content="ab"),
        Message(role="computer", type="console", format="output", content="c", id="o2"),
        Message(role="computer", type="console", format="active_line", content=None),
    ]
    with pytest.raises(MessageError, match="format 'output' but the open message has format"):
        list(from_chunks([{"role": "user", "type": "message", "start": True},
                          {"role": "user", "type": "message", "format": "output", "content": "x"}]))  # fmt: skip


def test_no_messages_no_chunks() -> None:
    assert list(iter_chunks([])) == []


def test_round_trip_of_a_conversation() -> None:
    msgs = [TEXT, CODE, LINE, REPLY, DONE]
    for max_chunk in (0, 1, 5):
        assert list(from_chunks(iter_chunks(msgs, max_chunk))) == msgs
        one_by_one = [chunk for m in msgs for chunk in to_chunks(m, max_chunk)]
        assert list(from_chunks(one_by_one)) == msgs


@given(st.lists(messages(), max_size=5), st.integers(min_value=0, max_value=20))
def test_round_trip_of_single_message_framing_is_exact(msgs: list[Message], max_chunk: int) -> None:
    chunks = [chunk for m in msgs for chunk in to_chunks(m, max_chunk)]
    assert len([c for c in chunks if c.get("start")]) == len(msgs)
    if max_chunk:
        assert all(
            len(c["content"]) <= max_chunk for c in chunks if isinstance(c.get("content"), str)
        )
    assert list(from_chunks(chunks)) == msgs


@given(st.lists(messages(), max_size=6), st.integers(min_value=0, max_value=20))
def test_round_trip_of_a_stream_with_ids_is_exact_but_for_empty_text(
    msgs: list[Message], max_chunk: int
) -> None:
    msgs = [m.model_copy(update={"id": f"m{i}"}) for i, m in enumerate(msgs)]
    chunks = list(iter_chunks(msgs, max_chunk))
    assert list(from_chunks(chunks)) == [m for m in msgs if m.content != ""]
    starts = [c for c in chunks if c.get("start")]
    assert len(starts) == len([c for c in chunks if c.get("end")]) <= len(msgs)


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


def test_documented_import_path_lmc_runtime_chunks_still_works() -> None:
    """``lmc_runtime.chunks``, which the docs name, gives the adapters' functions."""
    import lmc_runtime.chunks as documented
    from lmc_runtime.adapters import chunks

    for name in chunks.__all__:
        assert getattr(documented, name) is getattr(chunks, name)
