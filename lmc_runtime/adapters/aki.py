"""The AKI chat context: ``[{"role": ..., "content": [items]}]``.

Roles are ``system``, ``user`` and ``assistant``; content items are
``{"text": ...}``, ``{"image": "data:image/png;base64,..."}`` (or a path or
URL), ``{"audio": ...}`` and ``{"video": ...}``.

LMC → AKI (:func:`to_aki`): consecutive LMC messages with the same AKI role
share one message; assistant messages are ``assistant``, user and computer
messages ``user`` (a user message with ``extras.aki_role == "system"`` goes back
to ``system``). Each LMC message is one item: text, output and code as
``text``; base64 images as a data-URL ``image``; image paths as a plain
``image``; WAV audio as a data-URL ``audio``; an active line as an empty
``text``. Each item keeps the rest of its LMC message under ``"lmc"`` (with the
content when the item cannot show it), so the conversion is lossless.

AKI → LMC (:func:`from_aki`): items with ``"lmc"`` come back exactly; other
items are read by their key with the message's role (``system`` → user with
``extras.aki_role``). LMC has no video, so a ``video`` item becomes a
``message`` with the item in ``extras.aki_item``. Anything that is not a message object raises
:class:`~lmc_runtime.errors.MessageError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..messages import Message, parse_message
from ._common import (
    LMC_KEY,
    as_messages,
    data_url,
    envelope,
    image_format,
    objects,
    parse_data_url,
    restore,
    text_of,
)

__all__ = ["from_aki", "to_aki"]


def _role(message: Message) -> str:
    if message.role == "assistant":
        return "assistant"
    if message.role == "user" and (message.extras or {}).get("aki_role") == "system":
        return "system"
    return "user"


def _item(message: Message) -> dict[str, Any]:
    if message.type == "image":
        value = (
            message.content
            if message.format == "path"
            else data_url(message.format, message.content)
        )
        return {"image": value, LMC_KEY: envelope(message, with_content=False)}
    if message.type == "audio":
        url = data_url(message.format, message.content)
        return {"audio": url, LMC_KEY: envelope(message, with_content=False)}
    carried = isinstance(message.content, str)
    return {"text": text_of(message), LMC_KEY: envelope(message, with_content=not carried)}


def to_aki(messages: Iterable[Message | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The AKI chat context for ``messages`` (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for message in as_messages(messages):
        role = _role(message)
        if not out or out[-1]["role"] != role:
            out.append({"role": role, "content": []})
        out[-1]["content"].append(_item(message))
    return out


def _carried(item: Mapping[str, Any]) -> tuple[bool, Any]:
    """Whether the item shows its message's content, and the content it shows."""
    for key in ("image", "audio"):
        if key in item:
            parsed = parse_data_url(str(item[key]))
            return True, item[key] if parsed is None else parsed[1]
    return False, item.get("text")


def _foreign(item: Any, base: dict[str, Any]) -> Message:
    body: dict[str, Any]
    if isinstance(item, Mapping) and isinstance(item.get("text"), str):
        body = {"type": "message", "content": item["text"]}
    elif isinstance(item, Mapping) and isinstance(item.get("image"), str):
        parsed = parse_data_url(item["image"])
        body = (
            {"type": "image", "format": "path", "content": item["image"]}
            if parsed is None
            else {"type": "image", "format": image_format(parsed[0]), "content": parsed[1]}
        )
    elif isinstance(item, Mapping) and isinstance(item.get("audio"), str):
        parsed = parse_data_url(item["audio"])
        body = (
            {"type": "audio", "format": "wav", "content": parsed[1]}
            if parsed is not None
            else {"type": "message", "content": "", "extras": {"aki_item": dict(item)}}
        )
    else:
        extras = {"aki_item": dict(item) if isinstance(item, Mapping) else item}
        body = {"type": "message", "content": "", "extras": extras}
    if "extras" in base:
        body["extras"] = {**base["extras"], **body.get("extras", {})}
    return parse_message({**base, **body})


def from_aki(context: Iterable[Mapping[str, Any]]) -> list[Message]:
    """LMC messages for an AKI chat context (see the module docstring)."""
    out: list[Message] = []
    for message in objects(context, "an AKI message"):
        role = message.get("role")
        base: dict[str, Any] = {"role": "assistant" if role == "assistant" else "user"}
        if role not in ("user", "assistant"):
            base["extras"] = {"aki_role": role}
        content = message.get("content")
        items = content if isinstance(content, list) else [{"text": str(content or "")}]
        for item in items:
            meta = item.get(LMC_KEY) if isinstance(item, Mapping) else None
            if isinstance(meta, Mapping):
                shows, value = _carried(item)
                carried = shows or "content" not in meta
                out.append(restore(meta, value, carried=carried))
            else:
                out.append(_foreign(item, base))
    return out
