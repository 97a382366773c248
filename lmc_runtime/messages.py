"""LMC messages: OpenAI-style messages with a ``type``, a ``format`` and a ``computer`` role.

Every role, type and format of the LMC protocol is covered:

========  ==============================================================
type      formats
========  ==============================================================
message   (none)
console   ``active_line`` (int or null), ``output`` (str)
image     ``base64``, ``base64.png``, ``base64.jpeg`` (base64 str), ``path``
code      ``html``, ``javascript``, ``python``, ``r``, ``applescript``,
          ``shell``, and any other language name an assistant may use
audio     ``wav`` (base64 str)
========  ==============================================================

Optional fields: ``id``, ``in_reply_to`` (computer messages point at the code
message they answer), ``conversation_id`` (the thread a stored message belongs
to), ``created_at`` (Unix seconds) and ``extras`` (provider-specific data,
carried untouched). ``id``, ``in_reply_to`` and ``conversation_id`` are the
envelope: thread stores give every message they keep an id and a conversation.
"""

from __future__ import annotations

import binascii
import re
import time
import uuid
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import MessageError

__all__ = [
    "CODE_FORMATS",
    "FORMATS",
    "ROLES",
    "TYPES",
    "Message",
    "new_id",
    "parse_message",
]

Role = Literal["user", "assistant", "computer"]
MessageType = Literal["message", "console", "image", "code", "audio"]

ROLES: tuple[str, ...] = ("user", "assistant", "computer")
TYPES: tuple[str, ...] = ("message", "console", "image", "code", "audio")
CODE_FORMATS: tuple[str, ...] = ("html", "javascript", "python", "r", "applescript", "shell")
#: The formats the protocol defines for each type (``None``: no format).
FORMATS: dict[str, tuple[str | None, ...]] = {
    "message": (None,),
    "console": ("active_line", "output"),
    "image": ("base64", "base64.png", "base64.jpeg", "path"),
    "code": CODE_FORMATS,
    "audio": ("wav",),
}
_BASE64_FORMATS = frozenset({"base64", "base64.png", "base64.jpeg", "wav"})
_LANGUAGE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+.#-]{0,31}")


def new_id() -> str:
    """A fresh message id."""
    return uuid.uuid4().hex


def _check_base64(text: str) -> str | None:
    try:
        binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        return f"is not valid base64 ({exc})"
    return None


def _content_problem(type_: str, format_: str | None, content: Any) -> str | None:
    """Why ``content`` does not fit ``type_``/``format_``, or None if it does."""
    if type_ == "console" and format_ == "active_line":
        if content is None:
            return None
        if isinstance(content, bool) or not isinstance(content, int) or content < 1:
            return "must be a line number (an integer >= 1) or null"
        return None
    if not isinstance(content, str):
        return f"must be a string, not {type(content).__name__}"
    if format_ in _BASE64_FORMATS:
        return _check_base64(content)
    return None


class Message(BaseModel):
    """One LMC message.

    Construct it with keywords, or from a dict with :func:`parse_message`,
    which turns a validation failure into a :class:`MessageError` with one
    precise reason.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    role: Role
    type: MessageType
    format: str | None = None
    content: Any = None
    id: str | None = None
    in_reply_to: str | None = None
    conversation_id: str | None = None
    created_at: Annotated[float, Field(strict=True, allow_inf_nan=False)] | None = None
    extras: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _check_format_and_content(self) -> Message:
        allowed = FORMATS[self.type]
        if self.type == "code":
            if self.format is None or not _LANGUAGE_NAME.fullmatch(self.format):
                raise ValueError(
                    f"a code message needs a language in 'format' "
                    f"(one of {', '.join(CODE_FORMATS)}, or another language name), "
                    f"got {self.format!r}"
                )
        elif self.format not in allowed:
            expected = (
                "no format"
                if allowed == (None,)
                else "one of " + ", ".join(str(f) for f in allowed)
            )
            raise ValueError(
                f"format {self.format!r} is not valid for type {self.type!r}: expected {expected}"
            )
        problem = _content_problem(self.type, self.format, self.content)
        if problem is not None:
            raise ValueError(f"content of a {self.type}/{self.format} message {problem}")
        return self

    @property
    def language(self) -> str | None:
        """The language of a code message, else None."""
        return self.format if self.type == "code" else None

    def to_dict(self) -> dict[str, Any]:
        """The message as a plain JSON-able dict, without unset optional fields."""
        data: dict[str, Any] = {"role": self.role, "type": self.type}
        if self.format is not None:
            data["format"] = self.format
        data["content"] = self.content
        for key in ("id", "in_reply_to", "conversation_id", "created_at", "extras"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data

    @classmethod
    def computer(
        cls,
        type_: MessageType,
        format_: str | None,
        content: Any,
        *,
        in_reply_to: str | None = None,
        extras: dict[str, Any] | None = None,
    ) -> Message:
        """A computer-role message with a fresh id and timestamp."""
        return cls(
            role="computer",
            type=type_,
            format=format_,
            content=content,
            id=new_id(),
            in_reply_to=in_reply_to,
            created_at=time.time(),
            extras=extras,
        )


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in error["loc"])
        msg = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            msg = "unknown field; provider-specific data belongs in 'extras'"
        elif error["type"] == "literal_error" and "input" in error:
            msg = f"{error['input']!r} is not allowed: {msg.lower()}"
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def parse_message(data: Message | Mapping[str, Any]) -> Message:
    """Validate ``data`` as an LMC message.

    Raises :class:`MessageError` whose ``reason`` names the field at fault.
    """
    if isinstance(data, Message):
        return data
    if not isinstance(data, Mapping):
        raise MessageError(f"a message must be a JSON object, not {type(data).__name__}")
    try:
        return Message.model_validate(dict(data))
    except ValidationError as exc:
        raise MessageError(_describe(exc)) from exc
