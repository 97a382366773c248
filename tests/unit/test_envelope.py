"""The envelope (id, in_reply_to, conversation_id): carried by every message,
filled in for stored messages, and a message the runtime cannot process is
answered with a not-understood reply that references it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lmc_runtime.backends.registry import Registry
from lmc_runtime.intake import Rejected, accept
from lmc_runtime.messages import Message, parse_message
from lmc_runtime.store.base import stamp


def test_conversation_id_is_optional_and_survives_json() -> None:
    message = Message(role="user", type="message", content="hi", id="m1", conversation_id="t1")
    assert message.to_dict()["conversation_id"] == "t1"
    assert parse_message(json.loads(json.dumps(message.to_dict()))) == message
    assert "conversation_id" not in Message(role="user", type="message", content="").to_dict()


def test_stamp_gives_stored_messages_an_id_and_the_conversation() -> None:
    kept = Message(role="user", type="message", content="b", id="m2", conversation_id="elsewhere")
    first, second = stamp("t1", [{"role": "user", "type": "message", "content": "a"}, kept])
    assert first.id and first.conversation_id == "t1"
    assert second is kept


@pytest.mark.parametrize(
    ("message", "status"),
    [
        ({"role": "user", "type": "message", "content": "run this", "id": "x1"}, "not_understood"),
        (
            {"role": "assistant", "type": "code", "format": "cobol", "content": "x", "id": "x1"},
            "not_understood",
        ),
        ({"role": "assistant", "type": "code", "content": "x", "id": "x1"}, "malformed"),
        ({"role": "robot", "type": "message", "content": "x", "id": "x1"}, "malformed"),
    ],
    ids=["not-code", "unknown-language", "no-format", "bad-role"],
)
def test_not_understood_reply_references_the_message(message: dict[str, Any], status: str) -> None:
    with pytest.raises(Rejected) as info:
        accept(message, None, Registry())
    reply = info.value.reply
    assert reply.role == "computer" and reply.in_reply_to == "x1" and reply.id
    assert reply.extras is not None and reply.extras["status"] == status
    assert str(reply.content).startswith("[lmc] not understood:")
