"""Messages as other programs really write them: real-world OpenAI transcripts,
LangChain tool calls, Jan's own files and junk. Nothing is dropped silently and
nothing crashes with anything but a MessageError."""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    SystemMessage,
    ToolMessage,
    content,
    convert_to_messages,
)

from lmc_runtime.adapters import aki, jan, langchain, openai
from lmc_runtime.errors import MessageError
from lmc_runtime.messages import Message

from .conversation import CONVERSATION


def execute(call_id: str, language: str, code: str) -> dict[str, Any]:
    arguments = json.dumps({"language": language, "code": code})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "execute", "arguments": arguments},
    }


def test_openai_parallel_calls_with_text_and_array_tool_contents() -> None:
    got = openai.from_openai(
        [
            {
                "role": "assistant",
                "content": "Running both.",
                "tool_calls": [execute("c1", "python", "1"), execute("c2", "shell", "ls")],
            },
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "1"}]},
            {"role": "tool", "tool_call_id": "c2", "content": "a b"},
        ]
    )
    assert [(m.role, m.type, m.content, m.id, m.in_reply_to) for m in got] == [
        ("assistant", "message", "Running both.", None, None),
        ("assistant", "code", "1", "c1", None),
        ("assistant", "code", "ls", "c2", None),
        ("computer", "console", "1", None, "c1"),
        ("computer", "console", "a b", None, "c2"),
    ]


def test_openai_refusals_are_kept_not_dropped() -> None:
    got = openai.from_openai(
        [
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
        ]
    )
    assert [(m.content, m.extras) for m in got] == [
        ("I can't help with that.", {"openai_refusal": True}),
        ("No.", {"openai_refusal": True}),
    ]


def test_openai_name_fields_and_unusual_roles_are_kept_in_extras() -> None:
    got = openai.from_openai(
        [
            {"role": "user", "content": "hi", "name": "bob"},
            {"role": "function", "name": "lookup", "content": "legacy result"},
        ]
    )
    assert got[0].extras == {"openai_name": "bob"}
    assert got[1].content == "legacy result"
    assert got[1].extras == {"openai_role": "function", "openai_name": "lookup"}


def test_openai_execute_arguments_given_as_an_object_still_run() -> None:
    call = {
        "id": "c4",
        "type": "function",
        "function": {"name": "execute", "arguments": {"language": "python", "code": "2"}},
    }
    (code,) = openai.from_openai([{"role": "assistant", "content": None, "tool_calls": [call]}])
    assert (code.type, code.format, code.content, code.id) == ("code", "python", "2", "c4")


def test_openai_parts_lmc_cannot_hold_are_kept_in_extras() -> None:
    mp3 = {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}}
    file = {"type": "file", "file": {"file_id": "file-1"}}
    got = openai.from_openai([{"role": "user", "content": [mp3, file]}])
    assert [(m.type, m.extras) for m in got] == [
        ("message", {"openai_part": mp3}),
        ("message", {"openai_part": file}),
    ]


@pytest.mark.parametrize(
    "message",
    [
        {
            "role": "user",
            "content": [],
            "lmc": [{"role": "user", "type": "image", "at": {"part": 3}}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a", "function": {"name": "execute", "arguments": "{}"}}],
            "lmc": [{"role": "assistant", "type": "code", "format": "py", "at": {"arguments": 0}}],
        },
        {"role": "user", "content": "x", "lmc": [{"role": "user", "type": "message", "at": 5}]},
    ],
    ids=["missing-part", "missing-code", "bad-at"],
)
def test_openai_metadata_that_does_not_fit_is_a_message_error(message: dict[str, Any]) -> None:
    with pytest.raises(MessageError):
        openai.from_openai([message])


FROM: dict[str, Callable[[list[Any]], list[Message]]] = {
    "openai": openai.from_openai,
    "langchain": langchain.from_langchain,
    "aki": aki.from_aki,
    "jan": jan.from_jan,
}


@pytest.mark.parametrize("name", sorted(FROM))
@pytest.mark.parametrize("junk", ["a string", 5, None, ["a", "list"]], ids=repr)
def test_junk_in_place_of_a_message_is_a_message_error(name: str, junk: object) -> None:
    with pytest.raises(MessageError):
        FROM[name]([junk])


def test_langchain_tool_calls_become_code_messages() -> None:
    got = langchain.from_langchain(
        [
            SystemMessage("be brief"),
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "execute", "args": {"language": "python", "code": "1"}, "id": "c1"},
                    {"name": "search", "args": {"q": "x"}, "id": "c2"},
                ],
            ),
            ToolMessage("1", tool_call_id="c1"),
        ]
    )
    assert got[0].extras == {"langchain_role": "system"}
    assert (got[1].type, got[1].format, got[1].content, got[1].id) == ("code", "python", "1", "c1")
    assert got[2].type == "message" and got[2].extras is not None
    assert got[2].extras["langchain_tool_call"]["name"] == "search"
    assert (got[3].role, got[3].content, got[3].in_reply_to) == ("computer", "1", "c1")
    assert len(got) == 4


def test_langchain_v1_tool_call_block_and_tool_calls_are_one_call() -> None:
    block = {
        "type": "tool_call",
        "id": "c9",
        "name": "execute",
        "args": {"language": "shell", "code": "ls"},
    }
    message = AIMessage(content=[{"type": "text", "text": "hi"}, block], tool_calls=[block])
    got = langchain.from_langchain([message])
    assert [(m.type, m.content) for m in got] == [("message", "hi"), ("code", "ls")]


def test_langchain_blocks_use_only_the_v1_standard_keys() -> None:
    schemas = {
        "text": content.TextContentBlock,
        "image": content.ImageContentBlock,
        "audio": content.AudioContentBlock,
        "non_standard": content.NonStandardContentBlock,
    }
    wav = Message(role="computer", type="audio", format="wav", content="UklG")
    converted = langchain.to_langchain([*CONVERSATION, wav])
    for message in convert_to_messages(converted):
        assert isinstance(message.content, list)
        for block in message.content:
            assert isinstance(block, dict)
            allowed = typing.get_type_hints(schemas[block["type"]])
            assert set(block) <= set(allowed), block["type"]


def test_jan_files_written_by_jan_read_with_seconds_and_leftovers() -> None:
    written_by_jan = {
        "id": "01HX",
        "object": "thread.message",
        "thread_id": "jan_1716263400",
        "assistant_id": "jan",
        "attachments": [],
        "role": "assistant",
        "content": [{"type": "text", "text": {"value": "Hello", "annotations": ["cite"]}}],
        "status": "ready",
        "created_at": 1716263411925,  # Jan writes milliseconds
        "completed_at": 1716263412000,
        "metadata": {"token_speed": 12},
    }
    (message,) = jan.from_jan([written_by_jan])
    assert message.created_at == pytest.approx(1716263411.925)
    assert message.extras == {"jan": {"metadata": {"token_speed": 12}, "annotations": [["cite"]]}}
    assert jan.seconds(1716263411) == 1716263411.0
    assert jan.seconds(float("inf")) is None and jan.seconds(True) is None
