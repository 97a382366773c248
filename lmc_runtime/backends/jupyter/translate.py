"""Translation from Jupyter messages to LMC computer messages.

A display (``display_data``, ``execute_result``) is a MIME bundle; one of its
types stands for it (:func:`choose`), in this order:

1. a picture: PNG and JPEG as they are; GIF and WebP converted to PNG (first
   frame); SVG rendered to PNG (:mod:`lmc_runtime.media`), or a note saying why
   it could not be, with its size and how to enable a renderer;
2. ``text/html``, as ``code``/``html`` followed by its ``text/plain``;
3. ``text/markdown``, ``text/latex``, then JSON (``application/json`` and
   ``application/*+json``, pretty-printed), before ``text/plain``;
4. ``text/plain``: the text of any other bundle, vendor types
   (``application/vnd.*``: widgets, plot specs) included;
5. otherwise a note naming the types that could not be shown.

The ``text/plain`` that follows a note that a picture could not be shown is
left out when it is a bare default repr (``<x.Y object at 0x...>``).

A picture whose bundle also carries :data:`CHART_MIME` (the data the Python
kernel extracts from a matplotlib figure) gets it as ``extras.chart``.

The first message of a display keeps the whole bundle in ``extras.display``
(:func:`mark_display`): ``main`` (the value of the cell's last expression, an
``execute_result``), ``shown`` (the type the message's content holds as it came,
left out of ``data``) and ``data`` (every other type); the display's further
messages say ``{"part": true}`` there. A client that wants every format (E2B's
code interpreter) rebuilds the bundle; the output budget charges it.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

from ... import replies
from ...media import SvgRenderer, to_png
from ...messages import Message
from ...replies import Status

__all__ = [
    "ACTIVE_LINE_MSG_TYPE",
    "CHART_MIME",
    "DISPLAY_KEY",
    "INPUT_REQUEST_MSG_TYPE",
    "TABLE_MIME",
    "choose",
    "mark_display",
    "strip_ansi",
    "translate_bundle",
    "translate_iopub",
    "translate_payload",
]

#: The IOPub message type the in-kernel sampler publishes.
ACTIVE_LINE_MSG_TYPE = "lmc_active_line"
#: The IOPub copy of an ``input_request`` that the kernel's startup code publishes.
INPUT_REQUEST_MSG_TYPE = "lmc_input_request"
#: The bundle type that carries a figure's chart data beside its picture.
CHART_MIME = "application/vnd.lmc.chart+json"
#: The bundle type that carries a pandas DataFrame's columns beside its HTML.
TABLE_MIME = "application/vnd.lmc.table+json"
#: The extras key of a display's messages (see :func:`mark_display`).
DISPLAY_KEY = "display"
#: The types a display's first message holds as they came (base64 joined); a
#: text one does when its content is the type's text unchanged.
_VERBATIM = {"image": ("image/png", "image/jpeg"), "code": ("text/html",)}

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_PICTURES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
_TEXTS = ("text/markdown", "text/latex", "application/json")
#: JSON types other than vendors' own (``application/geo+json``, ``application/ld+json``).
_JSON = re.compile(r"application/(?!vnd\.)[\w.+-]+\+json")
_DEFAULT_REPR = re.compile(r"<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return str(value)


def _informative(data: Mapping[str, Any]) -> bool:
    plain = data.get("text/plain")
    return plain is not None and not _DEFAULT_REPR.fullmatch(_text(plain).strip())


def choose(data: Mapping[str, Any]) -> str | None:
    """The type that stands for the bundle ``data``, or None when none can be shown."""
    for mime in (*_PICTURES, "text/html", *_TEXTS):
        if mime in data:
            return mime
    json_types = [m for m in data if _JSON.fullmatch(m)]
    if json_types:
        return json_types[0]
    return "text/plain" if "text/plain" in data else None


def _pretty_json(value: Any) -> str:
    if isinstance(value, str):  # JSON as a string, as very old kernels sent it
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return json.dumps(value, indent=2, ensure_ascii=False)


def _plain(data: Mapping[str, Any], reply_to: str) -> list[Message]:
    """The bundle's ``text/plain`` as output, if it says anything."""
    if not _informative(data):
        return []
    return [replies.output(strip_ansi(_text(data["text/plain"])), reply_to)]


def _picture(payload: str, mime: str, data: Mapping[str, Any], reply_to: str) -> Message:
    image = replies.image(payload, mime, reply_to)
    chart = data.get(CHART_MIME)
    if isinstance(chart, dict):
        image = image.model_copy(update={"extras": {**(image.extras or {}), "chart": chart}})
    return image


async def _converted(
    mime: str, data: Mapping[str, Any], reply_to: str, svg: SvgRenderer | None
) -> list[Message]:
    """A GIF, WebP or SVG display as a PNG picture, or a note saying why not."""
    if mime == "image/svg+xml":
        rendered = await (svg or SvgRenderer()).render(_text(data[mime]))
        png, note = rendered.png, rendered.note
        status = Status.UNAVAILABLE if rendered.unavailable else Status.ERROR
    else:
        try:
            raw = base64.b64decode("".join(_text(data[mime]).split()), validate=True)
        except ValueError as exc:
            png, note, status = None, f"it is not valid base64 ({exc})", Status.ERROR
        else:
            converted = await to_png(raw)
            png, note, status = converted.png, converted.note, Status.ERROR
        note = f"The {mime} display could not be shown: {note}."
    if png is None:
        return [replies.notice(note or "", status, reply_to), *_plain(data, reply_to)]
    return [_picture(base64.b64encode(png).decode("ascii"), "image/png", data, reply_to)]


async def translate_bundle(
    data: Mapping[str, Any], reply_to: str, *, svg: SvgRenderer | None = None
) -> list[Message]:
    """A MIME bundle as LMC messages (see the module's docstring for the order).

    ``svg`` renders SVG pictures (by default cairosvg, else Chromium).
    """
    mime = choose(data)
    if mime is None:
        shown = [m for m in data if m != CHART_MIME]
        if not shown:
            return []
        text = f"[display of {', '.join(shown)} not shown]\n"
        return [replies.output(text, reply_to, not_shown=shown)]
    if mime in ("image/png", "image/jpeg"):
        return [_picture("".join(_text(data[mime]).split()), mime, data, reply_to)]
    if mime in _PICTURES:
        return await _converted(mime, data, reply_to, svg)
    if mime == "text/html":
        plain = data.get("text/plain")
        html = [replies.html(_text(data[mime]), reply_to)]
        if plain is None:
            return html
        return [*html, replies.output(strip_ansi(_text(plain)), reply_to)]
    if mime == "application/json" or _JSON.fullmatch(mime):
        return [replies.output(_pretty_json(data[mime]), reply_to)]
    return [replies.output(strip_ansi(_text(data[mime])), reply_to)]


def mark_display(out: list[Message], data: Mapping[str, Any], *, main: bool) -> list[Message]:
    """``out``, the messages of the display ``data``, with the bundle kept in the
    first one's ``extras.display`` and the others marked as its parts."""
    if not out:
        return out
    first = out[0]
    shown = choose(data)
    if shown is not None and not (
        shown in _VERBATIM.get(first.type, ())
        or (first.type == "console" and first.content == _text(data[shown]))
    ):
        shown = None
    display: dict[str, Any] = {"main": main}
    if shown is not None:
        display["shown"] = shown
    # A picture's chart data is its ``extras.chart`` already.
    carried = {shown, CHART_MIME if "chart" in (first.extras or {}) else None}
    display["data"] = {k: v for k, v in data.items() if k not in carried}
    marked = [first.model_copy(update={"extras": {**(first.extras or {}), DISPLAY_KEY: display}})]
    for message in out[1:]:
        extras = {**(message.extras or {}), DISPLAY_KEY: {"part": True}}
        marked.append(message.model_copy(update={"extras": extras}))
    return marked


async def translate_iopub(
    msg: Mapping[str, Any], reply_to: str, *, svg: SvgRenderer | None = None
) -> list[Message]:
    """One IOPub message (not stream output) as zero or more LMC messages."""
    msg_type = msg["msg_type"]
    content = msg["content"]
    if msg_type in ("execute_result", "display_data", "update_display_data"):
        data = content.get("data", {})
        out = await translate_bundle(data, reply_to, svg=svg)
        return mark_display(out, data, main=msg_type == "execute_result")
    if msg_type == "error":
        trace = "\n".join(strip_ansi(line) for line in content.get("traceback", []))
        if not trace:
            trace = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"
        value = content.get("evalue")
        told = {"error_value": value} if isinstance(value, str) else {}
        return [
            replies.output(
                trace + "\n", reply_to, stream="stderr", error=content.get("ename"), **told
            )
        ]
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
