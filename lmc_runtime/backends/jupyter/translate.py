"""Pure translation from Jupyter messages to LMC computer messages."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ... import replies
from ...messages import Message

__all__ = [
    "ACTIVE_LINE_MSG_TYPE",
    "INPUT_REQUEST_MSG_TYPE",
    "strip_ansi",
    "translate_bundle",
    "translate_iopub",
    "translate_payload",
]

#: The IOPub message type the in-kernel sampler publishes.
ACTIVE_LINE_MSG_TYPE = "lmc_active_line"
#: The IOPub copy of an ``input_request`` that the kernel's startup code publishes.
INPUT_REQUEST_MSG_TYPE = "lmc_input_request"

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_IMAGE_TYPES = ("image/png", "image/jpeg")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return str(value)


def translate_bundle(data: Mapping[str, Any], reply_to: str) -> list[Message]:
    """A MIME bundle (display_data, execute_result) as LMC messages.

    One image wins over the text repr (PNG before JPEG); HTML comes as ``code``/``html`` plus its
    ``text/plain``; anything else falls back to ``text/plain``.
    """
    for mime in _IMAGE_TYPES:
        if mime in data:
            payload = "".join(_text(data[mime]).split())
            return [replies.image(payload, mime, reply_to)]
    out: list[Message] = []
    if "text/html" in data:
        out.append(replies.html(_text(data["text/html"]), reply_to))
    plain = data.get("text/plain")
    if plain is not None:
        out.append(replies.output(strip_ansi(_text(plain)), reply_to))
    return out


def translate_iopub(msg: Mapping[str, Any], reply_to: str) -> list[Message]:
    """One IOPub message (not stream output) as zero or more LMC messages."""
    msg_type = msg["msg_type"]
    content = msg["content"]
    if msg_type in ("execute_result", "display_data", "update_display_data"):
        return translate_bundle(content.get("data", {}), reply_to)
    if msg_type == "error":
        trace = "\n".join(strip_ansi(line) for line in content.get("traceback", []))
        if not trace:
            trace = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"
        return [replies.output(trace + "\n", reply_to, stream="stderr", error=content.get("ename"))]
    return []


def translate_payload(payloads: list[Mapping[str, Any]], reply_to: str) -> list[Message]:
    """Pager payloads of an ``execute_reply`` (``obj?`` help) as output."""
    out: list[Message] = []
    for payload in payloads:
        if payload.get("source") == "page":
            text = payload.get("data", {}).get("text/plain", "")
            if text:
                out.append(replies.output(strip_ansi(_text(text)) + "\n", reply_to))
    return out
