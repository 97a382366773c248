"""lmc_runtime.adapters.langchain, checked with the real langchain-core package."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_messages
from langchain_core.messages.content import is_data_content_block

from lmc_runtime.adapters.langchain import from_langchain, to_langchain
from lmc_runtime.messages import Message

from .conversation import CONVERSATION, PNG_1PX

WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


def test_langchain_core_reads_the_messages_and_their_standard_blocks() -> None:
    audio = Message(role="user", type="audio", format="wav", content=WAV, id="au")
    converted = to_langchain([*CONVERSATION, audio])
    lc = convert_to_messages(converted)
    assert [type(m) for m in lc] == [HumanMessage, AIMessage, HumanMessage, AIMessage, HumanMessage]
    blocks = [b for m in lc for b in m.content_blocks]
    assert [b["type"] for b in blocks] == [
        "text",
        "text",
        "text",
        "non_standard",
        "text",
        "image",
        "text",
        "non_standard",
        "text",
        "audio",
    ]
    image = next(b for b in blocks if b["type"] == "image")
    assert image["base64"] == PNG_1PX and image["mime_type"] == "image/png"
    assert is_data_content_block(dict(image))
    sound = next(b for b in blocks if b["type"] == "audio")
    assert sound["mime_type"] == "audio/wav" and is_data_content_block(dict(sound))
    # extras are preserved: the error output keeps its extras through langchain-core.
    error = next(b for b in blocks if b["type"] == "text" and "ZeroDivisionError" in b["text"])
    assert error["extras"]["lmc"]["extras"] == {"error": "ZeroDivisionError", "stream": "stderr"}
    # And the objects convert back exactly, as do their serialized dicts.
    assert from_langchain(lc) == [*CONVERSATION, audio]
    assert from_langchain(json.loads(json.dumps(converted))) == [*CONVERSATION, audio]


def test_foreign_langchain_messages_read_by_block_type() -> None:
    lc = [
        HumanMessage(content="hi"),
        HumanMessage(content=[{"type": "image", "url": "data:image/jpeg;base64,/9j/"}]),
        AIMessage(
            content=[{"type": "reasoning", "reasoning": "hm"}, {"type": "text", "text": "ok"}]
        ),
        ToolMessage(content="42", tool_call_id="t1"),
    ]
    got = from_langchain(lc)
    assert got[0] == Message(role="user", type="message", content="hi")
    assert got[1] == Message(role="user", type="image", format="base64.jpeg", content="/9j/")
    assert got[2].extras == {"langchain_block": {"type": "reasoning", "reasoning": "hm"}}
    assert got[3] == Message(role="assistant", type="message", content="ok")
    assert got[4] == Message(
        role="computer", type="console", format="output", content="42", in_reply_to="t1"
    )
