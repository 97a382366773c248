"""What the executor accepts, and the "not understood" reply for what it does not.

:func:`accept` turns anything a caller may pass to ``run``/``arun`` into a
:class:`Request`, or raises :class:`Rejected` carrying the one reply that says
exactly why it cannot run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import replies
from .backends.registry import Registry
from .errors import MessageError
from .messages import Message, new_id, parse_message

__all__ = ["MessageInput", "Rejected", "Request", "accept"]

#: What ``run``/``arun`` accept: an LMC dict, a :class:`Message`, or a language name
#: (with the code as the second argument).
MessageInput = Message | Mapping[str, Any] | str


@dataclass(frozen=True)
class Request:
    """A code message the executor can route: its language and the id to answer."""

    language: str
    code: str
    reply_to: str


class Rejected(Exception):
    """The message cannot run; ``reply`` is the not-understood answer."""

    def __init__(self, reply: Message) -> None:
        super().__init__(reply.content)
        self.reply = reply


def _parse(message: MessageInput, code: str | None) -> Message:
    if isinstance(message, str):
        if code is None:
            raise MessageError("give the code too: run(language, code)")
        return parse_message(
            {"role": "assistant", "type": "code", "format": message, "content": code}
        )
    if code is not None:
        raise MessageError("pass either a message or (language, code), not both")
    return parse_message(message)


def _check_encodable(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MessageError(
            f"content is not valid Unicode text: a lone surrogate at index {exc.start}"
        ) from exc


def accept(message: MessageInput, code: str | None, registry: Registry) -> Request:
    """The request in ``message``, or :class:`Rejected` with the reason."""
    try:
        raw_id = message.get("id") if isinstance(message, Mapping) else None
    except Exception:  # a hostile Mapping: its id is unknowable
        raw_id = None
    try:
        msg = _parse(message, code)
        if isinstance(msg.content, str):
            _check_encodable(msg.content)
    except MessageError as exc:
        reply_to = raw_id if isinstance(raw_id, str) else None
        raise Rejected(replies.not_understood(exc.reason, reply_to, status="malformed")) from exc
    except Exception as exc:
        reason = f"the message could not be read: {exc!r}"
        raise Rejected(replies.not_understood(reason, None, status="malformed")) from exc
    reply_to = msg.id or new_id()
    if msg.type != "code" or msg.role != "assistant":
        raise Rejected(
            replies.not_understood(
                f"only assistant code messages can be run, got a {msg.role} {msg.type} message",
                reply_to,
            )
        )
    assert msg.format is not None
    name = registry.resolve(msg.format)
    if name is None:
        known = ", ".join(sorted(registry))
        raise Rejected(
            replies.not_understood(
                f"unknown language {msg.format!r}; this computer runs: {known}", reply_to
            )
        )
    return Request(name, str(msg.content), reply_to)
