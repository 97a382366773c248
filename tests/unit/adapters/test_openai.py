"""lmc_runtime.adapters.openai: the Chat Completions shapes each direction produces."""

from __future__ import annotations

import json

from lmc_runtime.adapters.openai import IMAGE_NOTE, NO_OUTPUT, execute_tool, from_openai, to_openai
from lmc_runtime.messages import Message

from .conversation import CONVERSATION, PNG_1PX

CODE = Message(role="assistant", type="code", format="python", content="print(1)", id="c1")


def out(text: str) -> Message:
    return Message(role="computer", type="console", format="output", content=text, in_reply_to="c1")


def test_code_becomes_an_execute_call_and_output_its_tool_message() -> None:
    plain = to_openai([CODE, out("1\n"), out("2\n")], metadata=False)
    assert plain[0]["role"] == "assistant" and plain[0]["content"] is None
    (call,) = plain[0]["tool_calls"]
    assert call["id"] == "c1" and call["function"]["name"] == "execute"
    assert json.loads(call["function"]["arguments"]) == {"language": "python", "code": "print(1)"}
    assert plain[1:] == [{"role": "tool", "tool_call_id": "c1", "content": "1\n2\n"}]


def test_images_go_on_a_user_message_after_the_tool_message() -> None:
    image = Message(
        role="computer", type="image", format="base64.png", content=PNG_1PX, in_reply_to="c1"
    )
    plain = to_openai([CODE, image], metadata=False)
    assert [m["role"] for m in plain] == ["assistant", "tool", "user"]
    assert plain[1]["content"] == NO_OUTPUT
    note, part = plain[2]["content"]
    assert note == {"type": "text", "text": IMAGE_NOTE.format(call_id="c1")}
    assert part == {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG_1PX}}


def test_plain_messages_stay_plain() -> None:
    messages = [
        Message(role="user", type="message", content="hi"),
        Message(role="assistant", type="message", content="hello"),
    ]
    assert to_openai(messages, metadata=False) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


def test_a_model_transcript_without_metadata_reads_back() -> None:
    """Regression: what a server sends (parallel calls, bad arguments, system prompt)."""
    transcript = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": "Running.",
            "tool_calls": [
                {
                    "id": "k1",
                    "type": "function",
                    "function": {
                        "name": "execute",
                        "arguments": '{"language": "python", "code": "1"}',
                    },
                },
                {
                    "id": "k2",
                    "type": "function",
                    "function": {"name": "execute", "arguments": "{not json"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "k1", "content": "1"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": IMAGE_NOTE.format(call_id="k1")},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
            ],
        },
        {"role": "tool", "tool_call_id": "k2", "content": [{"type": "text", "text": "bad"}]},
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://example.org/cat.png"}}],
        },
    ]
    got = from_openai(transcript)
    assert got[0] == Message(
        role="user", type="message", content="be brief", extras={"openai_role": "system"}
    )
    assert got[1] == Message(role="user", type="message", content="go")
    assert got[2] == Message(role="assistant", type="message", content="Running.")
    assert got[3] == Message(role="assistant", type="code", format="python", content="1", id="k1")
    assert got[4].type == "message" and got[4].extras == {
        "openai_tool_call": transcript[2]["tool_calls"][1]
    }
    assert got[5] == Message(
        role="computer", type="console", format="output", content="1", in_reply_to="k1"
    )
    assert got[6] == Message(
        role="computer", type="image", format="base64.jpeg", content="/9j/", in_reply_to="k1"
    )
    assert got[7] == Message(
        role="computer", type="console", format="output", content="bad", in_reply_to="k2"
    )
    assert got[8] == Message(
        role="user", type="image", format="path", content="https://example.org/cat.png"
    )
    # And they go out again as the same calls, answered in order.
    again = to_openai(got, metadata=False)
    assert again[0] == {"role": "system", "content": "be brief"}
    assert [c["id"] for m in again for c in m.get("tool_calls", [])] == ["k1", "k2"]
    assert [m["tool_call_id"] for m in again if m["role"] == "tool"] == ["k1", "k2"]


def test_golden_conversation_without_metadata_keeps_what_a_model_needs() -> None:
    back = from_openai(to_openai(CONVERSATION, metadata=False))
    kinds = [(m.role, m.type, m.format) for m in back]
    assert ("assistant", "code", "python") in kinds
    assert ("computer", "image", "base64.png") in kinds
    assert any("ZeroDivisionError" in str(m.content) for m in back if m.role == "computer")


def test_execute_tool_lists_the_languages() -> None:
    tool = execute_tool(["python", "shell"])
    assert tool["function"]["name"] == "execute"
    params = tool["function"]["parameters"]
    assert params["required"] == ["language", "code"]
    assert params["properties"]["language"]["enum"] == ["python", "shell"]
