"""LangChain messages with v1 standard content blocks.

LMC → LangChain (:func:`to_langchain`): a list of LangChain message dicts
(``{"role": ..., "content": [blocks]}``, which
``langchain_core.messages.convert_to_messages`` turns into ``HumanMessage`` and
``AIMessage`` objects). Consecutive LMC messages with the same LangChain role
share one message; assistant messages go out as ``assistant``, user and
computer messages as ``user``. Each LMC message becomes one block:

- text, console output and code → ``{"type": "text", "text": ...}``;
- base64 images → ``{"type": "image", "base64": ..., "mime_type": ...}``;
- WAV audio → ``{"type": "audio", "base64": ..., "mime_type": "audio/wav"}``;
- what has no standard block (active lines, image paths) →
  ``{"type": "non_standard", "value": {"lmc": <the message>}}``.

Every standard block keeps the rest of its LMC message (role, type, format,
ids, timestamps and the message's own ``extras``) in ``extras["lmc"]``, so the
conversion is lossless.

LangChain → LMC (:func:`from_langchain`): takes those dicts, or message objects
(anything with ``type`` and ``content`` attributes). Blocks carrying ``lmc``
come back exactly; other blocks are read by their type, with the message's
role (``human`` → user, ``ai`` → assistant, ``tool`` → computer output
answering ``tool_call_id``, ``system`` → user with ``extras.langchain_role``).
An AI message's tool calls (its ``tool_calls``, or ``tool_call`` blocks) that
call ``execute`` with string ``language`` and ``code`` become assistant
``code`` messages whose id is the call id; other calls become assistant
``message``s with the call in ``extras.langchain_tool_call``. Anything that is
not a message raises :class:`~lmc_runtime.errors.MessageError`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import MessageError
from ..messages import Message, parse_message
from ._common import (
    LMC_KEY,
    as_messages,
    envelope,
    image_format,
    mime_of,
    parse_data_url,
    restore,
)

__all__ = ["EXECUTE", "from_langchain", "to_langchain"]

#: The tool name whose calls are code messages (the same as for OpenAI).
EXECUTE = "execute"

_ROLES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant"}


def _block(message: Message) -> dict[str, Any]:
    block: dict[str, Any]
    if message.type == "image" and message.format != "path":
        block = {"type": "image", "base64": message.content, "mime_type": mime_of(message.format)}
    elif message.type == "audio":
        block = {"type": "audio", "base64": message.content, "mime_type": mime_of(message.format)}
    elif isinstance(message.content, str) and message.type != "image":
        block = {"type": "text", "text": message.content}
    else:
        return {"type": "non_standard", "value": {LMC_KEY: envelope(message, with_content=True)}}
    if message.id is not None:
        block["id"] = message.id
    block["extras"] = {LMC_KEY: envelope(message, with_content=False)}
    return block


def to_langchain(messages: Iterable[Message | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """LangChain message dicts with standard content blocks (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for message in as_messages(messages):
        role = "assistant" if message.role == "assistant" else "user"
        if not out or out[-1]["role"] != role:
            out.append({"role": role, "content": []})
        out[-1]["content"].append(_block(message))
    return out


def _fields(message: Any) -> tuple[str, Any, str | None, Any]:
    """(role or type, content, tool_call_id, tool_calls) of a dict or a message object."""
    if isinstance(message, Mapping):
        role = message.get("role", message.get("type"))
        return (
            str(role),
            message.get("content"),
            message.get("tool_call_id"),
            message.get("tool_calls"),
        )
    if not (hasattr(message, "type") and hasattr(message, "content")):
        raise MessageError(f"not a LangChain message: {type(message).__name__}")
    return (
        str(message.type),
        message.content,
        getattr(message, "tool_call_id", None),
        getattr(message, "tool_calls", None),
    )


def _call(call: Mapping[str, Any]) -> Message:
    """An LMC message for a tool call: LangChain's ``{name, args, id}`` or OpenAI's shape."""
    function = call.get("function")
    name, args = call.get("name"), call.get("args")
    if isinstance(function, Mapping):  # an OpenAI-style call in a message dict
        name, args = function.get("name"), function.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = None
    call_id = call.get("id")
    if (
        name == EXECUTE
        and isinstance(args, Mapping)
        and isinstance(args.get("language"), str)
        and isinstance(args.get("code"), str)
        and (call_id is None or isinstance(call_id, str))
    ):
        with contextlib.suppress(MessageError):
            return parse_message(
                {
                    "role": "assistant",
                    "type": "code",
                    "format": args["language"],
                    "content": args["code"],
                    "id": call_id,
                }
            )
    extras = {"langchain_tool_call": dict(call)}
    return Message(role="assistant", type="message", content="", extras=extras)


def _foreign(block: Mapping[str, Any], base: dict[str, Any]) -> Message:
    """An LMC message for a block that came from elsewhere."""
    kind = block.get("type")
    body: dict[str, Any]
    if kind == "tool_call":
        return _call(block)
    if kind == "text":
        body = {"type": "message", "content": str(block.get("text", ""))}
        if base["role"] == "computer":
            body = {"type": "console", "format": "output", "content": body["content"]}
    elif kind in ("image", "audio") and isinstance(block.get("base64"), str):
        format_ = "wav" if kind == "audio" else image_format(block.get("mime_type"))
        body = {"type": kind, "format": format_, "content": block["base64"]}
    elif kind == "image" and isinstance(block.get("url"), str):
        parsed = parse_data_url(block["url"])
        if parsed is None:
            body = {"type": "image", "format": "path", "content": block["url"]}
        else:
            body = {"type": "image", "format": image_format(parsed[0]), "content": parsed[1]}
    else:
        body = {"type": "message", "content": "", "extras": {"langchain_block": dict(block)}}
    return parse_message({**base, **body})


def _read_block(block: Any, base: dict[str, Any]) -> Message:
    if isinstance(block, str):
        return _foreign({"type": "text", "text": block}, base)
    if not isinstance(block, Mapping):
        return _foreign({"type": "unknown", "value": repr(block)}, base)
    value = block.get("value")
    if block.get("type") == "non_standard" and isinstance(value, Mapping) and LMC_KEY in value:
        return restore(value[LMC_KEY], carried=False)
    extras = block.get("extras")
    if isinstance(extras, Mapping) and isinstance(extras.get(LMC_KEY), Mapping):
        kind = block.get("type")
        content = block.get("text") if kind == "text" else block.get("base64")
        return restore(extras[LMC_KEY], content, carried=True)
    return _foreign(block, base)


def from_langchain(messages: Iterable[Any]) -> list[Message]:
    """LMC messages for LangChain messages (dicts or objects; see the module docstring)."""
    out: list[Message] = []
    for message in messages:
        role, content, tool_call_id, tool_calls = _fields(message)
        base: dict[str, Any] = {"role": _ROLES.get(role, "user")}
        if role == "tool":
            base = {"role": "computer", "in_reply_to": tool_call_id}
        elif role not in _ROLES:
            base["extras"] = {"langchain_role": role}
        if isinstance(content, list):
            blocks = content
        elif content or not tool_calls:
            blocks = [content if content is not None else ""]
        else:  # an AI message that only calls tools
            blocks = []
        read = [_read_block(block, base) for block in blocks]
        out.extend(read)
        called = {m.id for m in read if m.type == "code"} | {
            (m.extras or {}).get("langchain_tool_call", {}).get("id") for m in read
        }
        for call in tool_calls if isinstance(tool_calls, list) else []:
            if isinstance(call, Mapping) and (call.get("id") is None or call["id"] not in called):
                out.append(_call(call))
    return out
