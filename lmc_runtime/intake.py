"""What the executor accepts, and the "not understood" reply for what it does not.

:func:`accept` turns anything a caller may pass to ``run``/``arun`` into a
:class:`Request`, or raises :class:`Rejected` carrying the one reply that says
exactly why it cannot run. Its steps are public for callers that route a code
message elsewhere (the service): :func:`read_message`, :func:`code_message`
and :func:`raw_id`.
"""

from __future__ import annotations

import json
import math
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from . import replies
from .arguments import MessageInput, check_call, env_problem
from .backends.registry import Registry
from .errors import ArgumentTypeError, MessageError
from .messages import Message, new_id, parse_message

__all__ = [
    "MessageInput",
    "Rejected",
    "Request",
    "accept",
    "code_message",
    "raw_id",
    "read_json_object",
    "read_message",
]


@dataclass(frozen=True)
class Request:
    """A code message the executor can route: its language, the id to answer, and
    the variables its ``extras.env`` sets for this execution only."""

    language: str
    code: str
    reply_to: str
    env: Mapping[str, str] = field(default_factory=dict)


class Rejected(Exception):
    """The message cannot run; ``reply`` is the not-understood answer."""

    def __init__(self, reply: Message) -> None:
        super().__init__(reply.content)
        self.reply = reply


class _NotJson(ValueError):
    """A number JSON (RFC 8259) does not have: NaN, Infinity, or one too large for a float."""


def _no_constant(name: str) -> NoReturn:
    raise _NotJson(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"the number {reprlib.repr(text)} is too large")
    return value


def _lone_surrogate(data: Any) -> str | None:
    """The first string in ``data`` that holds a lone surrogate, else None."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return value
        elif isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def read_json_object(raw: bytes) -> dict[str, Any]:
    """``raw`` (one UTF-8 JSON text) as an object, or MessageError saying why not.

    Strict, and safe with any input: deep nesting, endless digits, NaN and
    Infinity, invalid UTF-8, lone surrogates and values other than an object all
    give a reason that reads after a subject ("line 3 is not JSON: ..."), never a
    RecursionError or another exception.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MessageError(f"is not UTF-8 (byte {exc.start})") from exc
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise MessageError(f"is not JSON: {exc.msg} at column {exc.colno}") from exc
    except _NotJson as exc:
        raise MessageError(f"is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise MessageError("is not JSON: arrays or objects nest too deeply") from exc
    except ValueError as exc:  # int(): more digits than Python converts
        raise MessageError("is not JSON: a number has too many digits") from exc
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
        raise MessageError(f"is not a JSON object but {kind.get(type(data), 'a number')}")
    odd = _lone_surrogate(data)
    if odd is not None:
        raise MessageError(f"is not Unicode text: {reprlib.repr(odd)} holds a lone surrogate")
    return data


def _parse(message: MessageInput, code: str | None) -> Message:
    if isinstance(message, tuple):
        try:
            message, code = check_call(message, code)
        except ArgumentTypeError as exc:
            raise MessageError(str(exc)) from exc
    if isinstance(message, str):
        if code is None:
            raise MessageError("give the code too: run(language, code)")
        return parse_message(
            {"role": "assistant", "type": "code", "format": message, "content": code}
        )
    if code is not None or isinstance(message, tuple):
        raise MessageError("pass either a message or (language, code), not both")
    return parse_message(message)


def _check_encodable(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MessageError(
            f"content is not valid Unicode text: a lone surrogate at index {exc.start}"
        ) from exc


def raw_id(message: object) -> str | None:
    """The id of a message that may not parse, to answer it with; None if it has none."""
    try:
        value = message.get("id") if isinstance(message, Mapping) else None
    except Exception:  # a hostile Mapping: its id is unknowable
        return None
    return value if isinstance(value, str) else None


def read_message(message: MessageInput, code: str | None = None) -> Message:
    """``message`` (or ``language, code``) parsed, its content valid Unicode text;
    :class:`MessageError` says why not."""
    msg = _parse(message, code)
    if isinstance(msg.content, str):
        _check_encodable(msg.content)
    return msg


def _not_code(msg: Message) -> str | None:
    if msg.type != "code" or msg.role != "assistant":
        return f"only assistant code messages can be run, got a {msg.role} {msg.type} message"
    return None


def code_message(message: MessageInput, code: str | None = None) -> Message:
    """``message`` as an assistant code message with an id; :class:`MessageError` says
    why not. Its language is not looked up: that takes a registry (see :func:`accept`)."""
    msg = read_message(message, code)
    reason = _not_code(msg)
    if reason is not None:
        raise MessageError(reason)
    return msg if msg.id is not None else msg.model_copy(update={"id": new_id()})


def accept(message: MessageInput, code: str | None, registry: Registry) -> Request:
    """The request in ``message``, or :class:`Rejected` with the reason."""
    try:
        msg = read_message(message, code)
    except MessageError as exc:
        reply = replies.not_understood(exc.reason, raw_id(message), status="malformed")
        raise Rejected(reply) from exc
    except Exception as exc:
        reason = f"the message could not be read ({type(exc).__name__})"
        raise Rejected(replies.not_understood(reason, None, status="malformed")) from exc
    reply_to = msg.id or new_id()
    not_code = _not_code(msg)
    if not_code is not None:
        raise Rejected(replies.not_understood(not_code, reply_to))
    assert msg.format is not None
    name = registry.resolve(msg.format)
    if name is None:
        here = [known for known in sorted(registry) if registry.availability(known).available]
        raise Rejected(
            replies.not_understood(
                f"unknown language {msg.format!r}; this computer runs: {', '.join(here)}",
                reply_to,
            )
        )
    env = (msg.extras or {}).get("env")
    problem = None if env is None else env_problem(env)
    if problem is not None:
        raise Rejected(replies.not_understood(f"extras.env {problem}", reply_to))
    return Request(name, str(msg.content), reply_to, dict(env or {}))
