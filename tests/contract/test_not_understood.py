"""What cannot run gets one "not understood" reply saying why, at once; nothing raises."""

from __future__ import annotations

from typing import Any

import pytest

from lmc_runtime import Computer

from .languages import Profile


def _one_reply(computer: Computer, message: Any) -> Any:
    replies = list(computer.run(message))
    assert len(replies) == 1, replies
    (reply,) = replies
    assert reply.role == "computer" and reply.type == "console" and reply.format == "output"
    assert str(reply.content).startswith("[lmc] not understood:"), reply.content
    return reply


@pytest.mark.parametrize(
    "content", [None, 42, {"code": "1"}], ids=["content-None", "content-int", "content-dict"]
)
def test_a_malformed_code_message_is_answered_malformed(
    lang: Profile, computer: Computer, content: Any
) -> None:
    message = {
        "role": "assistant",
        "type": "code",
        "format": lang.name,
        "content": content,
        "id": "bad-1",
    }
    reply = _one_reply(computer, message)
    assert reply.status == "malformed"
    assert reply.in_reply_to == "bad-1"
    assert "content" in reply.content


@pytest.mark.parametrize("message", [{}, {"role": "assistant"}], ids=["empty", "no-type"])
def test_what_is_not_a_message_is_answered_malformed(computer: Computer, message: Any) -> None:
    assert _one_reply(computer, message).status == "malformed"


@pytest.mark.parametrize("message", [None, 5], ids=["None", "int"])
def test_what_is_no_message_at_all_raises_type_error(computer: Computer, message: Any) -> None:
    """A caller's bug, not the model's: it raises at once, it is never a reply."""
    with pytest.raises(TypeError, match="run\\(\\) takes an LMC message"):
        computer.run(message)


def test_an_unknown_language_is_not_understood_and_named(computer: Computer) -> None:
    reply = _one_reply(
        computer,
        {"role": "assistant", "type": "code", "format": "cobol", "content": "1", "id": "c1"},
    )
    assert reply.status == "not_understood"
    assert "cobol" in reply.content and reply.in_reply_to == "c1"


def test_a_message_that_is_not_code_is_not_understood(computer: Computer) -> None:
    reply = _one_reply(computer, {"role": "user", "type": "message", "content": "hello"})
    assert reply.status == "not_understood"


@pytest.mark.local_only("a session's languages are fixed: the server answers others not_understood")
def test_an_unavailable_language_is_answered_unavailable_with_its_reason(
    computer: Computer,
) -> None:
    missing = {name: s.reason for name, s in computer.languages.items() if not s.available}
    if not missing:
        pytest.skip("every language is available here")
    for name, reason in missing.items():
        message = {"role": "assistant", "type": "code", "format": name, "content": "1"}
        reply = _one_reply(computer, message)
        assert reply.status == "unavailable", reply
        assert reason is not None and reason in reply.content
