"""Losslessness: LMC → X → LMC gives back the same messages for every format,
over generated conversations (through JSON text, as they would be stored or sent)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmc_runtime.adapters import aki, jan, langchain, openai
from lmc_runtime.messages import Message

from ..strategies import messages

FORMATS: dict[str, tuple[Callable[[list[Message]], Any], Callable[[Any], list[Message]]]] = {
    "openai": (openai.to_openai, openai.from_openai),
    "langchain": (langchain.to_langchain, langchain.from_langchain),
    "aki": (aki.to_aki, aki.from_aki),
    "jan": (lambda ms: jan.to_jan(ms, thread_id="t1"), jan.from_jan),
}

#: Messages with the whole envelope, conversation_id included.
enveloped = st.tuples(messages(), st.none() | st.text(max_size=16)).map(
    lambda pair: pair[0].model_copy(update={"conversation_id": pair[1]})
)
conversations = st.lists(enveloped, max_size=10)


@pytest.mark.parametrize("name", sorted(FORMATS))
@settings(max_examples=150, deadline=None)
@given(conversation=conversations)
def test_lmc_to_format_and_back_is_lossless(name: str, conversation: list[Message]) -> None:
    to, from_ = FORMATS[name]
    converted = json.loads(json.dumps(to(conversation)))
    assert from_(converted) == conversation


@pytest.mark.parametrize("name", sorted(FORMATS))
@settings(max_examples=100, deadline=None)
@given(conversation=conversations)
def test_converters_accept_dicts_and_do_not_mutate_their_input(
    name: str, conversation: list[Message]
) -> None:
    to, from_ = FORMATS[name]
    dicts = [m.to_dict() for m in conversation]
    before = json.dumps(dicts)
    converted = to(dicts)  # type: ignore[arg-type]
    assert json.dumps(dicts) == before
    snapshot = json.dumps(converted)
    assert from_(converted) == conversation
    assert json.dumps(converted) == snapshot


@settings(max_examples=200, deadline=None)
@given(conversation=conversations)
def test_openai_without_metadata_carries_no_lmc_keys(conversation: list[Message]) -> None:
    plain = openai.to_openai(conversation, metadata=False)
    assert all("lmc" not in m for m in plain)
    # Every tool call is answered by a tool message right after it, as Chat Completions needs.
    for index, message in enumerate(plain):
        for call in message.get("tool_calls") or []:
            assert len(message["tool_calls"]) == 1
            assert plain[index + 1]["role"] == "tool"
            assert plain[index + 1]["tool_call_id"] == call["id"]
