"""OpenAI Chat Completions messages.

LMC → OpenAI (:func:`to_openai`):

- an assistant ``code`` message becomes an assistant message with one
  ``tool_calls`` entry calling the ``execute`` function with
  ``{"language": ..., "code": ...}``; the call id is the message id;
- the computer messages that follow it become the ``tool`` message answering
  that call (their text, in order; ``"(no output)"`` if there is none);
- images (and audio) among them go as ``image_url`` data-URL parts
  (``input_audio`` parts) on a user message right after the tool message, since
  tool messages cannot carry images;
- other messages become ordinary ``user``/``assistant`` messages (computer
  messages outside a call are shown to the model as ``user`` messages).

Every OpenAI message keeps the LMC messages it came from under the ``"lmc"`` key
(each without the content the OpenAI message already carries), which makes the
conversion lossless. Pass ``metadata=False`` for a request to a chat endpoint.

OpenAI → LMC (:func:`from_openai`): messages with ``"lmc"`` metadata come back
exactly; other transcripts are read as a model wrote them (see
:mod:`._openai_read`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..messages import Message
from ._common import LMC_KEY, as_messages, data_url, envelope, text_of
from ._openai_read import from_openai

__all__ = ["EXECUTE", "IMAGE_NOTE", "NO_OUTPUT", "execute_tool", "from_openai", "to_openai"]

#: The name of the function that runs code.
EXECUTE = "execute"
#: The text part that opens a user message carrying a tool call's images.
IMAGE_NOTE = "Images and audio from the code run above ({call_id})."
#: The tool message content when the code printed nothing.
NO_OUTPUT = "(no output)"


def execute_tool(languages: Sequence[str] | None = None) -> dict[str, Any]:
    """The ``tools`` entry declaring ``execute`` (``languages`` become an enum)."""
    language: dict[str, Any] = {"type": "string", "description": "the language of the code"}
    if languages:
        language["enum"] = list(languages)
    return {
        "type": "function",
        "function": {
            "name": EXECUTE,
            "description": (
                "Run code on the user's computer and return its output, errors and images. "
                "State persists between calls in the same language."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "language": language,
                    "code": {"type": "string", "description": "the code to run"},
                },
                "required": ["language", "code"],
            },
        },
    }


class _Call:
    """An open tool call: its tool message and the user message for its media."""

    def __init__(self, call_id: str, out: list[dict[str, Any]]) -> None:
        self.call_id = call_id
        self.out = out
        self.tool: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": ""}
        self.tool_meta: list[dict[str, Any]] = []
        self.media: dict[str, Any] | None = None
        self.seq = 0  # the order of the call's messages across tool and media messages
        out.append(self.tool)

    def add(self, message: Message) -> None:
        self.seq += 1
        if message.type in ("image", "audio") and message.format != "path":
            if self.media is None:
                note = IMAGE_NOTE.format(call_id=self.call_id)
                self.media = {"role": "user", "content": [{"type": "text", "text": note}]}
                self.media[LMC_KEY] = []
                self.out.append(self.media)
            parts = self.media["content"]
            parts.append(_media_part(message))
            self.media[LMC_KEY].append(
                {
                    **envelope(message, with_content=False),
                    "at": {"part": len(parts) - 1, "seq": self.seq},
                }
            )
            return
        if message.type == "console" and message.format == "active_line":
            self.tool_meta.append({**envelope(message, with_content=True), "at": {"seq": self.seq}})
            return
        text = text_of(message)
        start = len(self.tool["content"])
        self.tool["content"] += text
        at = {"text": [start, start + len(text)], "seq": self.seq}
        self.tool_meta.append({**envelope(message, with_content=False), "at": at})

    def close(self) -> None:
        if not self.tool["content"]:
            self.tool["content"] = NO_OUTPUT
        self.tool[LMC_KEY] = self.tool_meta


def _media_part(message: Message) -> dict[str, Any]:
    if message.type == "audio":
        return {"type": "input_audio", "input_audio": {"data": message.content, "format": "wav"}}
    return {"type": "image_url", "image_url": {"url": data_url(message.format, message.content)}}


def _tool_call(message: Message, call_id: str) -> dict[str, Any]:
    foreign = (message.extras or {}).get("openai_tool_call")
    if message.type != "code" and isinstance(foreign, dict):
        return dict(foreign)
    arguments = json.dumps({"language": message.format, "code": message.content})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": EXECUTE, "arguments": arguments},
    }


def _opens_call(message: Message) -> bool:
    if message.role != "assistant":
        return False
    foreign = (message.extras or {}).get("openai_tool_call")
    return message.type == "code" or (
        message.type == "message"
        and isinstance(foreign, dict)
        and isinstance(foreign.get("id"), str)
    )


def _plain(message: Message) -> dict[str, Any]:
    """One LMC message outside a tool call as one OpenAI message."""
    role = "assistant" if message.role == "assistant" else "user"
    openai_role = (message.extras or {}).get("openai_role")
    if (
        message.role == "user"
        and message.type == "message"
        and openai_role in ("system", "developer")
    ):
        role = openai_role
    if role == "user" and message.type in ("image", "audio") and message.format != "path":
        meta = {**envelope(message, with_content=False), "at": {"part": 0}}
        return {"role": role, "content": [_media_part(message)], LMC_KEY: [meta]}
    if (message.type == "console" and message.format == "active_line") or (
        message.type in ("image", "audio") and message.format != "path"
    ):
        return {"role": role, "content": "", LMC_KEY: [envelope(message, with_content=True)]}
    text = text_of(message)
    meta = {**envelope(message, with_content=False), "at": {"text": [0, len(text)]}}
    return {"role": role, "content": text, LMC_KEY: [meta]}


def to_openai(
    messages: Iterable[Message | Mapping[str, Any]], *, metadata: bool = True
) -> list[dict[str, Any]]:
    """Chat Completions messages for ``messages`` (see the module docstring).

    With ``metadata=False`` the ``"lmc"`` keys are left out, for sending to a
    chat endpoint; the result is then no longer lossless.
    """
    out: list[dict[str, Any]] = []
    call: _Call | None = None
    for index, message in enumerate(as_messages(messages)):
        if call is not None and message.role == "computer":
            call.add(message)
            continue
        if call is not None:
            call.close()
            call = None
        if _opens_call(message):
            call_id = message.id or f"call_{index}"
            tool_call = _tool_call(message, call_id)
            call_id = str(tool_call.get("id", call_id))
            arguments_carry = message.type == "code"
            meta = envelope(message, with_content=not arguments_carry)
            if arguments_carry:
                meta["at"] = {"arguments": 0}
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous["role"] == "assistant"
                and "tool_calls" not in previous
                and isinstance(previous["content"], str)
            ):  # a model's text and its call are one message
                previous["tool_calls"] = [tool_call]
                previous[LMC_KEY].append(meta)
            else:
                out.append(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [tool_call],
                        LMC_KEY: [meta],
                    }
                )
            call = _Call(call_id, out)
        else:
            out.append(_plain(message))
    if call is not None:
        call.close()
    if not metadata:
        return [{k: v for k, v in m.items() if k != LMC_KEY} for m in out]
    return out
