"""Jan's thread messages (``object: "thread.message"``, one JSON line each in
``threads/<id>/messages.jsonl``).

LMC → Jan (:func:`to_jan`): one thread message per LMC message, with ``id`` (the
message id, or ``<thread>:<index>`` if it has none), ``thread_id``,
``assistant_id``, ``role`` (``assistant`` for assistant and computer messages,
``user`` for user messages), ``status: "ready"``, ``created_at`` (whole Unix
seconds) and ``content: [{"type": "text", "text": {"value", "annotations"}}]``
showing the message to a reader: code as a fenced block, output and text as
they are; base64 images also as an ``image_url`` part. The whole LMC message is
kept in ``metadata["lmc"]``, so the conversion is lossless.

Jan → LMC (:func:`from_jan`): messages with ``metadata["lmc"]`` come back
exactly; others become text messages and images of their role, with the Jan
message id as ``id``, the thread id as ``conversation_id`` and ``created_at``
in seconds (Jan's own millisecond timestamps are divided by 1000). Jan's
``metadata``, text ``annotations`` and a ``status`` other than ``ready``, when
there are any, are kept in ``extras.jan``. Anything that is not a message object raises
:class:`~lmc_runtime.errors.MessageError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..messages import Message, parse_message
from ._common import LMC_KEY, as_messages, data_url, image_format, objects, parse_data_url, text_of

__all__ = ["from_jan", "seconds", "to_jan"]

#: Timestamps above this are milliseconds (in seconds it would be the year 5138).
_MILLISECONDS = 1e11


def seconds(value: object) -> float | None:
    """A Jan timestamp in Unix seconds (Jan writes milliseconds); None if it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not (0 <= value < float("inf")):
        return None
    return value / 1000 if value > _MILLISECONDS else float(value)


def _text_part(value: str) -> dict[str, Any]:
    return {"type": "text", "text": {"value": value, "annotations": []}}


def _shown(message: Message) -> str:
    if message.type == "code" and message.format != "html":
        return f"```{message.format}\n{message.content}\n```"
    return text_of(message)


def _content(message: Message) -> list[dict[str, Any]]:
    parts = [_text_part(_shown(message))]
    if message.type == "image" and message.format != "path":
        url = data_url(message.format, message.content)
        parts.append({"type": "image_url", "image_url": {"url": url, "detail": "auto"}})
    return parts


def to_jan(
    messages: Iterable[Message | Mapping[str, Any]],
    *,
    thread_id: str,
    assistant_id: str = "lmc-runtime",
) -> list[dict[str, Any]]:
    """Jan thread messages for ``messages`` in thread ``thread_id``."""
    out = []
    for index, message in enumerate(as_messages(messages)):
        created = int(message.created_at) if message.created_at is not None else 0
        out.append(
            {
                "id": message.id if message.id else f"{thread_id}:{index}",
                "object": "thread.message",
                "thread_id": thread_id,
                "assistant_id": assistant_id,
                "role": "user" if message.role == "user" else "assistant",
                "content": _content(message),
                "status": "ready",
                "created_at": created,
                "completed_at": created,
                "metadata": {LMC_KEY: message.to_dict()},
            }
        )
    return out


def _foreign(message: Mapping[str, Any]) -> list[Message]:
    role = "assistant" if message.get("role") == "assistant" else "user"
    envelope: dict[str, Any] = {"role": role}
    for key, source in (("id", "id"), ("conversation_id", "thread_id")):
        if isinstance(message.get(source), str):
            envelope[key] = message[source]
    created = seconds(message.get("created_at"))
    if created is not None:
        envelope["created_at"] = created
    extras: dict[str, Any] = {}
    if message.get("role") not in ("user", "assistant"):
        extras["jan_role"] = message.get("role")
    jan: dict[str, Any] = {"metadata": message["metadata"]} if message.get("metadata") else {}
    if message.get("status") not in (None, "ready"):
        jan["status"] = message["status"]
    texts, images, annotations = [], [], []
    content = message.get("content")
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text":
            text = part.get("text")
            texts.append(str(text.get("value", "")) if isinstance(text, Mapping) else str(text))
            if isinstance(text, Mapping) and text.get("annotations"):
                annotations.append(text["annotations"])
        elif part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else None
            parsed = parse_data_url(url) if isinstance(url, str) else None
            if parsed is not None:
                images.append(
                    {"type": "image", "format": image_format(parsed[0]), "content": parsed[1]}
                )
    if annotations:
        jan["annotations"] = annotations
    if jan:
        extras["jan"] = jan
    if extras:
        envelope["extras"] = extras
    out = [parse_message({**envelope, "type": "message", "content": "".join(texts)})]
    for image in images:
        out.append(parse_message({**envelope, **image, "id": None}))
    return out


def from_jan(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """LMC messages for Jan thread messages (see the module docstring)."""
    out: list[Message] = []
    for message in objects(messages, "a Jan message"):
        metadata = message.get("metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get(LMC_KEY), Mapping):
            out.append(parse_message(metadata[LMC_KEY]))
        else:
            out.extend(_foreign(message))
    return out
