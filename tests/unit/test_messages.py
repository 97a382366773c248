"""lmc_runtime.messages: every role, type and format validates; malformed input is
rejected by ``parse_message`` with a precise reason; ``extras`` is carried untouched."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given

from lmc_runtime.errors import LMCError, MessageError
from lmc_runtime.messages import CODE_FORMATS, FORMATS, ROLES, Message, parse_message

from .strategies import messages

PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
WAV_HEADER = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

#: One valid (type, format, content) for every format the protocol defines.
VALID_BODIES: list[tuple[str, str | None, Any]] = [
    ("message", None, "Hello, can you list the files?"),
    ("console", "active_line", 1),
    ("console", "active_line", 42),
    ("console", "active_line", None),
    ("console", "output", "total 0\n"),
    ("image", "base64", PNG_1PX),
    ("image", "base64.png", PNG_1PX),
    ("image", "base64.jpeg", "/9j/4AAQSkZJRgABAQ=="),
    ("image", "path", "/tmp/plot.png"),
    ("code", "html", "<b>hi</b>"),
    ("code", "javascript", "console.log(1)"),
    ("code", "python", "print(1)"),
    ("code", "r", "print(1)"),
    ("code", "applescript", 'display dialog "hi"'),
    ("code", "shell", "ls -la"),
    ("audio", "wav", WAV_HEADER),
]


def test_valid_table_covers_every_protocol_format() -> None:
    """Guards the table above against drifting from ``FORMATS``."""
    covered = {(t, f) for t, f, _ in VALID_BODIES}
    expected = {(t, f) for t, formats in FORMATS.items() for f in formats}
    assert covered == expected
    assert set(CODE_FORMATS) <= {f for t, f, _ in VALID_BODIES if t == "code"}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("type_", "format_", "content"), VALID_BODIES)
def test_every_role_type_and_format_validates(
    role: str, type_: str, format_: str | None, content: Any
) -> None:
    data: dict[str, Any] = {"role": role, "type": type_}
    if format_ is not None:
        data["format"] = format_
    data["content"] = content
    message = parse_message(data)
    assert (message.role, message.type, message.format, message.content) == (
        role,
        type_,
        format_,
        content,
    )
    assert message.to_dict() == data


def test_code_language_other_than_the_listed_ones_is_accepted() -> None:
    message = parse_message({"role": "assistant", "type": "code", "format": "ruby", "content": ""})
    assert message.language == "ruby"


def test_language_is_none_for_non_code_messages() -> None:
    assert parse_message({"role": "user", "type": "message", "content": "x"}).language is None


def _msg(**fields: Any) -> dict[str, Any]:
    return {"role": "assistant", "type": "message", "content": "hi", **fields}


BAD_INPUTS: list[tuple[Any, str]] = [
    (_msg(format="python"), "format 'python' is not valid for type 'message': expected no format"),
    (
        _msg(type="console", format="text", content="x"),
        "format 'text' is not valid for type 'console': expected one of active_line, output",
    ),
    (_msg(type="image", format="png", content=PNG_1PX), "format 'png' is not valid for type"),
    (_msg(type="audio", format="mp3", content=WAV_HEADER), "format 'mp3' is not valid for type"),
    (_msg(type="code", content="print(1)"), "a code message needs a language in 'format'"),
    (_msg(type="code", format="my language", content="x"), "got 'my language'"),
    (_msg(type="code", format="9lang", content="x"), "got '9lang'"),
    (_msg(foo=1), "foo: unknown field; provider-specific data belongs in 'extras'"),
    (_msg(type="image", format="base64", content="not base64!!"), "is not valid base64"),
    (_msg(type="image", format="base64.png", content="abc"), "is not valid base64"),
    (_msg(type="image", format="base64.jpeg", content="é9j/"), "is not valid base64"),
    (_msg(type="audio", format="wav", content="UklG RiQ="), "is not valid base64"),
    (
        _msg(type="console", format="active_line", content=0),
        "content of a console/active_line message must be a line number (an integer >= 1) or null",
    ),
    (_msg(type="console", format="active_line", content=-3), "must be a line number"),
    (_msg(type="console", format="active_line", content="3"), "must be a line number"),
    (_msg(type="console", format="active_line", content=True), "must be a line number"),
    (_msg(type="console", format="active_line", content=2.0), "must be a line number"),
    (_msg(type="console", format="output", content=5), "must be a string, not int"),
    (_msg(content=None), "content of a message/None message must be a string, not NoneType"),
    (_msg(type="image", format="path", content=["a"]), "must be a string, not list"),
    ({"type": "message", "content": "hi"}, "role: Field required"),
    ({"role": "assistant", "content": "hi"}, "type: Field required"),
    (_msg(role="system"), "role: 'system' is not allowed"),
    (_msg(type="video"), "type: 'video' is not allowed"),
    (_msg(extras=["not", "a", "dict"]), "extras:"),
    (["role", "assistant"], "a message must be a JSON object, not list"),
    ("print(1)", "a message must be a JSON object, not str"),
    (None, "a message must be a JSON object, not NoneType"),
]


@pytest.mark.parametrize(("data", "reason"), BAD_INPUTS)
def test_malformed_messages_are_rejected_with_a_precise_reason(data: Any, reason: str) -> None:
    with pytest.raises(MessageError) as info:
        parse_message(data)
    assert reason in info.value.reason
    assert str(info.value) == info.value.reason


def test_message_error_is_a_value_error_and_an_lmc_error() -> None:
    with pytest.raises(ValueError):
        parse_message({"role": "nobody"})
    with pytest.raises(LMCError):
        parse_message({"role": "nobody"})


def test_reason_names_every_faulty_field() -> None:
    with pytest.raises(MessageError) as info:
        parse_message({"role": "robot", "type": "message", "content": "x", "colour": "red"})
    assert "role:" in info.value.reason
    assert "colour:" in info.value.reason


def test_code_language_with_trailing_newline_is_rejected() -> None:
    with pytest.raises(MessageError):
        parse_message(_msg(type="code", format="python\n", content="print(1)"))


def test_parse_message_returns_a_message_instance_as_is() -> None:
    message = Message(role="user", type="message", content="hi")
    assert parse_message(message) is message


def test_to_dict_omits_unset_optional_fields_but_keeps_null_content() -> None:
    message = parse_message(
        {"role": "computer", "type": "console", "format": "active_line", "content": None}
    )
    assert message.to_dict() == {
        "role": "computer",
        "type": "console",
        "format": "active_line",
        "content": None,
    }


EXTRAS: dict[str, Any] = {
    "status": "error",
    "anthropic": {"cache_control": {"type": "ephemeral"}},
    "scores": [1, 2.5, None, True, "x"],
    "nested": {"a": [{"b": []}], "": {}},
}


def test_extras_round_trip_untouched() -> None:
    data = _msg(id="m1", in_reply_to="c1", created_at=1700000000.25, extras=EXTRAS)
    message = parse_message(data)
    assert message.extras == EXTRAS
    assert message.to_dict() == data
    assert message.to_dict()["extras"] == EXTRAS
    assert parse_message(message.to_dict()) == message
    assert parse_message(json.loads(json.dumps(message.to_dict()))) == message


def test_computer_builder_sets_role_id_and_timestamp() -> None:
    message = Message.computer(
        "console", "output", "hi\n", in_reply_to="c1", extras={"status": "ok"}
    )
    assert message.role == "computer"
    assert message.in_reply_to == "c1"
    assert message.id and message.created_at
    assert message.extras == {"status": "ok"}
    other = Message.computer("console", "output", "hi\n")
    assert other.id != message.id


@given(messages())
def test_valid_messages_survive_to_dict_and_parse(message: Message) -> None:
    assert parse_message(message.to_dict()) == message
    assert parse_message(json.loads(json.dumps(message.to_dict()))) == message
