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
import math
import re
import reprlib
import time
import uuid
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import MessageError

__all__ = [
    "CODE_FORMATS",
    "FORMATS",
    "MAX_DEPTH",
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
#: How deeply arrays and objects may nest inside a message.
MAX_DEPTH = 100
#: The largest integer a message may hold: ``str()`` and ``json.dumps`` refuse
#: integers of more than 4300 digits, so one of those could never be written back.
_MAX_INT_BITS = 14_000
#: At most this many validation errors are spelled out in one reason.
_MAX_ERRORS = 3
_short = reprlib.Repr()
_short.maxstring = _short.maxother = _short.maxlong = 60
_short.maxlevel = 2


def new_id() -> str:
    """A fresh message id."""
    return uuid.uuid4().hex


def _check_base64(text: str) -> str | None:
    try:
        binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        return f"is not valid base64 ({exc})"
    return None


def _structure_problem(data: Any) -> str | None:
    """Why ``data`` could not be written as JSON, or None.

    Iterative, so no input can exhaust the stack: nesting deeper than
    :data:`MAX_DEPTH`, a container inside itself, a non-finite float or an
    integer too long for ``str()``.
    """
    on_path: set[int] = set()
    done: set[int] = set()
    # Each entry: the value, its depth, whether it is being left, and the
    # top-level field it sits in (named in the reason).
    stack: list[tuple[Any, int, bool, str]] = [(data, 0, False, "")]
    while stack:
        value, depth, leaving, field = stack.pop()
        where = f" in {field!r}" if field else ""
        if leaving:
            on_path.discard(id(value))
            done.add(id(value))
            continue
        if isinstance(value, float) and not math.isfinite(value):
            return f"holds {value!r}{where}, which is not a JSON number"
        if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
            return f"holds an integer with too many digits{where}"
        if not isinstance(value, dict | list | tuple):
            continue
        if id(value) in on_path:
            return f"holds a container inside itself{where}"
        if id(value) in done:
            continue
        if depth >= MAX_DEPTH:
            return f"nests arrays or objects more than {MAX_DEPTH} deep{where}"
        on_path.add(id(value))
        stack.append((value, depth, True, field))
        if isinstance(value, dict):
            for key, child in value.items():
                name = field or (key if isinstance(key, str) else "")
                stack.append((key, depth + 1, False, name))
                stack.append((child, depth + 1, False, name))
        else:
            stack.extend((child, depth + 1, False, field) for child in value)
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

    @property
    def is_final(self) -> bool:
        """Whether this is the last message of an execution (``active_line`` null)."""
        return (
            self.role == "computer"
            and self.type == "console"
            and self.format == "active_line"
            and self.content is None
        )

    @property
    def status(self) -> str | None:
        """The machine-readable ``extras["status"]``, if any."""
        value = self.extras.get("status") if self.extras else None
        return value if isinstance(value, str) else None

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
    errors = exc.errors(include_url=False)
    parts = []
    for error in errors[:_MAX_ERRORS]:
        loc = ".".join(p if isinstance(p, str) else str(p) for p in error["loc"])
        loc = _short.repr(loc)[1:-1] if len(loc) > 60 else loc
        msg = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            msg = "unknown field; provider-specific data belongs in 'extras'"
        elif error["type"] == "literal_error" and "input" in error:
            msg = f"{_short.repr(error['input'])} is not allowed: {msg.lower()}"
        parts.append(f"{loc}: {msg}" if loc else msg)
    if len(errors) > _MAX_ERRORS:
        parts.append(f"and {len(errors) - _MAX_ERRORS} more problems")
    return "; ".join(parts)


def parse_message(data: Message | Mapping[str, Any]) -> Message:
    """Validate ``data`` as an LMC message.

    Raises :class:`MessageError` whose ``reason`` names the field at fault,
    also for input no JSON writer could handle (see :func:`_structure_problem`),
    so a message that passes can always be stored and sent.
    """
    if isinstance(data, Message):
        return data
    if not isinstance(data, Mapping):
        raise MessageError(f"a message must be a JSON object, not {type(data).__name__}")
    fields = dict(data)
    problem = _structure_problem(fields)
    if problem is not None:
        raise MessageError(f"the message {problem}")
    try:
        return Message.model_validate(fields)
    except ValidationError as exc:
        raise MessageError(_describe(exc)) from exc
