"""OpenAI Chat Completions messages back to LMC messages.

A message carrying ``"lmc"`` metadata (written by ``to_openai``) gives back the
LMC messages it came from, exactly. Any other message is read as a model or an
application wrote it:

- ``system``/``developer`` (and any other role a model does not speak as, such
  as the legacy ``function``) → a user ``message`` with ``extras.openai_role``;
- ``user`` text → user ``message``; ``image_url`` parts → ``image`` (base64 for
  data URLs, ``path`` for other URLs); ``input_audio`` WAV parts → ``audio``;
  any other part (a file, audio in another format) → a ``message`` with the
  part as it was in ``extras.openai_part``;
- ``assistant`` text → assistant ``message``; a refusal → assistant
  ``message`` with the refusal as its text and ``extras.openai_refusal``; an
  ``execute`` tool call → an assistant ``code`` message whose id is the call
  id (arguments as a JSON string, or an object as some servers send them); any
  other call (or arguments that are not valid) → an assistant ``message`` with
  ``extras.openai_tool_call`` holding the call as it was;
- a ``name`` field is kept in ``extras.openai_name``;
- ``tool`` → a computer ``console``/``output`` answering the call
  (``in_reply_to`` is the call id), and the media of the user message that
  directly follows it (opened by the image note) → computer messages too.

Anything that is not a message object, or ``"lmc"`` metadata that does not fit
the message carrying it, raises :class:`~lmc_runtime.errors.MessageError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import MessageError
from ..messages import Message, parse_message
from ._common import LMC_KEY, image_format, objects, parse_data_url, restore

__all__ = ["from_openai"]

_EXECUTE = "execute"
_NOTE_START = "Images and audio from the code run above ("


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


def _part_content(part: Mapping[str, Any]) -> tuple[str, str | None, str] | None:
    """``(type, format, content)`` of an image or audio part, else None."""
    if part.get("type") == "image_url":
        url = part.get("image_url", {})
        url = url.get("url") if isinstance(url, Mapping) else url
        if not isinstance(url, str):
            return None
        parsed = parse_data_url(url)
        if parsed is None:
            return ("image", "path", url)
        return ("image", image_format(parsed[0]), parsed[1])
    if part.get("type") == "input_audio":
        audio = part.get("input_audio", {})
        if (
            isinstance(audio, Mapping)
            and isinstance(audio.get("data"), str)
            and audio.get("format", "wav") == "wav"
        ):
            return ("audio", "wav", audio["data"])
    return None


def _with_metadata(
    message: Mapping[str, Any], items: list[Any]
) -> list[tuple[int | None, Message]]:
    """The messages ``message`` came from, with their order within a tool call."""
    text = _text(message.get("content"))
    content = message.get("content")
    parts: list[Any] = content if isinstance(content, list) else []
    out = []
    for item in items:
        if not isinstance(item, Mapping):
            raise MessageError(f"'{LMC_KEY}' metadata must hold objects, not {item!r}")
        try:
            out.append(_restored(message, item, text, parts))
        except MessageError:
            raise
        except (LookupError, TypeError, ValueError, AttributeError) as exc:
            raise MessageError(
                f"'{LMC_KEY}' metadata does not fit its message ({type(exc).__name__}: {exc})"
            ) from exc
    return out


def _restored(
    message: Mapping[str, Any], item: Mapping[str, Any], text: str, parts: list[Any]
) -> tuple[int | None, Message]:
    """One message of the ``"lmc"`` metadata, with its content from where ``at`` says."""
    at = item.get("at")
    at = at if isinstance(at, Mapping) else {}
    seq = at.get("seq")
    if "text" in at:
        start, end = at["text"]
        restored = restore(item, text[start:end], carried=True)
    elif "part" in at:
        found = _part_content(parts[at["part"]])
        restored = restore(item, found[2] if found else None, carried=True)
    elif "arguments" in at:
        call = message["tool_calls"][at["arguments"]]
        arguments = _arguments(call["function"]["arguments"])
        restored = restore(item, arguments["code"], carried=True)
    else:
        restored = restore(item, carried=False)
    return (seq if isinstance(seq, int) else None, restored)


def _arguments(raw: Any) -> Any:
    """A tool call's arguments: a JSON string, or an object as some servers send them."""
    return raw if isinstance(raw, Mapping) else json.loads(raw or "{}")


def _tool_calls(calls: Any) -> list[Message]:
    out = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function", {}) if isinstance(call, Mapping) else {}
        try:
            arguments = _arguments(function.get("arguments"))
            language, code = arguments["language"], arguments["code"]
            if function.get("name") != _EXECUTE:
                raise ValueError("not the execute function")
            out.append(
                Message(
                    role="assistant", type="code", format=language, content=code, id=call.get("id")
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            out.append(
                Message(
                    role="assistant", type="message", content="", extras={"openai_tool_call": call}
                )
            )
    return out


def _refusals(message: Mapping[str, Any]) -> list[str]:
    """The refusals in an assistant message: its ``refusal`` field and refusal parts."""
    found = [message["refusal"]] if isinstance(message.get("refusal"), str) else []
    content = message.get("content")
    for part in content if isinstance(content, list) else []:
        if isinstance(part, Mapping) and part.get("type") == "refusal":
            found.append(str(part.get("refusal", "")))
    return found


class _Reader:
    def __init__(self) -> None:
        self.last_call: str | None = None

    def read(self, message: Mapping[str, Any]) -> list[Message]:
        read = self._read(message)
        name = message.get("name")
        if isinstance(name, str):
            read = [
                m.model_copy(update={"extras": {**(m.extras or {}), "openai_name": name}})
                for m in read
            ]
        return read

    def _read(self, message: Mapping[str, Any]) -> list[Message]:
        role = message.get("role")
        content = message.get("content")
        if role == "tool":
            call_id = message.get("tool_call_id")
            self.last_call = call_id if isinstance(call_id, str) else None
            return [
                Message(
                    role="computer",
                    type="console",
                    format="output",
                    content=_text(content),
                    in_reply_to=self.last_call,
                )
            ]
        reply_to, self.last_call = self.last_call, None
        if role == "assistant":
            text = _text(content)
            head = [Message(role="assistant", type="message", content=text)] if text else []
            refused = [
                Message(
                    role="assistant",
                    type="message",
                    content=refusal,
                    extras={"openai_refusal": True},
                )
                for refusal in _refusals(message)
            ]
            return head + refused + _tool_calls(message.get("tool_calls"))
        if role != "user":  # system, developer, the legacy function role...
            extras = {"openai_role": role}
            return [Message(role="user", type="message", content=_text(content), extras=extras)]
        return self._user(content, reply_to)

    def _user(self, content: Any, reply_to: str | None) -> list[Message]:
        if not isinstance(content, list):
            return [Message(role="user", type="message", content=_text(content))]
        first = content[0] if content else None
        is_media = (
            reply_to is not None
            and isinstance(first, Mapping)
            and str(first.get("text", "")).startswith(_NOTE_START)
        )
        out = []
        for part in content[1:] if is_media else content:
            found = _part_content(part) if isinstance(part, Mapping) else None
            if found is not None:
                type_, format_, data = found
                out.append(
                    parse_message(
                        {
                            "role": "computer" if is_media else "user",
                            "type": type_,
                            "format": format_,
                            "content": data,
                            "in_reply_to": reply_to if is_media else None,
                        }
                    )
                )
            elif isinstance(part, Mapping) and part.get("type") == "text":
                out.append(Message(role="user", type="message", content=str(part.get("text", ""))))
            else:  # a file, audio that is not WAV, a part from a newer API
                extras = {"openai_part": part}
                out.append(Message(role="user", type="message", content="", extras=extras))
        return out


def from_openai(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """LMC messages for a Chat Completions transcript (see the module docstring)."""
    reader = _Reader()
    out: list[Message] = []
    call: list[tuple[int, Message]] = []  # a tool call's messages, spread over two messages
    for message in objects(messages, "a Chat Completions message"):
        items = message.get(LMC_KEY)
        if isinstance(items, list):
            for seq, restored in _with_metadata(message, items):
                if seq is None:
                    out.extend(m for _, m in sorted(call, key=lambda pair: pair[0]))
                    call = []
                    out.append(restored)
                else:
                    call.append((seq, restored))
            reader.last_call = (
                message.get("tool_call_id") if message.get("role") == "tool" else None
            )
        else:
            out.extend(m for _, m in sorted(call, key=lambda pair: pair[0]))
            call = []
            out.extend(reader.read(message))
    out.extend(m for _, m in sorted(call, key=lambda pair: pair[0]))
    return out
