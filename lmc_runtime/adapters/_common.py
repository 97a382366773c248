"""Helpers shared by the converters: envelopes, data URLs and MIME types.

An *envelope* is an LMC message as a dict, with its ``content`` left out when
the target format carries the content itself. Converters store envelopes in the
target format's metadata and rebuild the message from envelope plus content.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import MessageError
from ..messages import Message, parse_message

__all__ = [
    "LMC_KEY",
    "as_messages",
    "data_url",
    "envelope",
    "image_format",
    "mime_of",
    "objects",
    "parse_data_url",
    "restore",
    "text_of",
]

#: The key under which converters keep LMC envelopes in a target's metadata.
LMC_KEY = "lmc"

_DATA_URL = re.compile(
    r"data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(;[^,;]*)*?);base64,(?P<data>.*)", re.S
)
_MIMES = {
    "base64.png": "image/png",
    "base64.jpeg": "image/jpeg",
    "base64": "image/png",
    "wav": "audio/wav",
}


def as_messages(messages: Iterable[Message | Mapping[str, Any]]) -> list[Message]:
    """Validate every item (dicts become :class:`Message`)."""
    return [parse_message(m) for m in messages]


def objects(items: Iterable[Any], what: str) -> Iterator[Mapping[str, Any]]:
    """Each of ``items``, which must be an object: MessageError names ``what`` if one is not."""
    for item in items:
        if not isinstance(item, Mapping):
            raise MessageError(f"{what} must be an object, not {type(item).__name__}")
        yield item


def envelope(message: Message, *, with_content: bool) -> dict[str, Any]:
    """The message as a dict; without ``content`` if the target carries it."""
    data = message.to_dict()
    if not with_content:
        del data["content"]
    return data


def restore(envelope_: Mapping[str, Any], content: Any = None, *, carried: bool) -> Message:
    """Rebuild a message from its envelope (and the content the target carried)."""
    data = {k: v for k, v in envelope_.items() if k != "at"}
    if carried:
        data["content"] = content
    return parse_message(data)


def mime_of(format_: str | None) -> str:
    """The MIME type of an image or audio format."""
    return _MIMES.get(format_ or "", "application/octet-stream")


def image_format(mime: str | None) -> str:
    """The LMC image format for a MIME type."""
    if mime == "image/png":
        return "base64.png"
    if mime in ("image/jpeg", "image/jpg"):
        return "base64.jpeg"
    return "base64"


def data_url(format_: str | None, data: str) -> str:
    """A ``data:`` URL for base64 ``data``."""
    return f"data:{mime_of(format_)};base64,{data}"


def parse_data_url(url: str) -> tuple[str | None, str] | None:
    """``(mime, base64 data)`` of a base64 data URL, or None for any other URL."""
    match = _DATA_URL.fullmatch(url)
    if match is None:
        return None
    return match["mime"], match["data"]


def text_of(message: Message) -> str:
    """The text a text-only format shows for a message (empty if there is none)."""
    if (
        isinstance(message.content, str)
        and message.type != "audio"
        and not (message.type == "image" and message.format != "path")
    ):
        return message.content
    return ""
