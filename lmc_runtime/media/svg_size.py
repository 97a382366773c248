"""The size an SVG document asks for, read from its root element alone.

Only the ``<svg>`` start tag is parsed: the document is fed to a pull parser
until the root element opens, so a large document costs no more than its
prologue. Lengths are converted to CSS pixels (96 per inch), as browsers and
cairosvg do; a percentage, or no size at all, falls back to the ``viewBox``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast
from xml.etree.ElementTree import Element, ParseError, XMLPullParser

__all__ = ["DEFAULT_SIZE", "SvgSize", "svg_size"]

#: CSS pixels per unit.
_UNITS = {
    "": 1.0,
    "px": 1.0,
    "pt": 96 / 72,
    "pc": 16.0,
    "in": 96.0,
    "cm": 96 / 2.54,
    "mm": 96 / 25.4,
    "q": 96 / 101.6,
    "em": 16.0,
    "ex": 8.0,
}
_LENGTH = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([a-zA-Z%]*)\s*")
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class SvgSize:
    """Width and height in CSS pixels."""

    width: float
    height: float

    def pixels(self) -> tuple[int, int]:
        """The size rounded to whole pixels, at least one each way."""
        return max(1, round(self.width)), max(1, round(self.height))

    def fitted(self, max_pixels: int, max_side: int) -> SvgSize:
        """This size scaled down, keeping its shape, to at most ``max_pixels`` and ``max_side``."""
        scale = min(1.0, max_side / self.width, max_side / self.height)
        area = self.width * self.height * scale * scale
        if area > max_pixels:
            scale *= (max_pixels / area) ** 0.5
        return SvgSize(self.width * scale, self.height * scale)

    def __str__(self) -> str:
        width, height = self.pixels()
        return f"{width} x {height} px"


#: What a browser makes of an SVG image that gives no size: the box of an ``<img>``
#: with none, which a percentage size is of.
DEFAULT_SIZE = SvgSize(300, 150)


def _length(value: str | None) -> float | None:
    """A length attribute in pixels; None for a percentage, ``auto`` or junk."""
    if value is None:
        return None
    match = _LENGTH.fullmatch(value)
    if match is None:
        return None
    unit = match.group(2).lower()
    if unit not in _UNITS:
        return None
    number = float(match.group(1)) * _UNITS[unit]
    return number if 0 < number < float("inf") else None


def _view_box(value: str | None) -> tuple[float, float] | None:
    if value is None:
        return None
    parts = value.replace(",", " ").split()
    try:
        width, height = float(parts[2]), float(parts[3])
    except (IndexError, ValueError):
        return None
    return (width, height) if width > 0 and height > 0 else None


def _root_attributes(svg: str) -> dict[str, str] | None:
    parser: XMLPullParser[Any] = XMLPullParser(events=("start",))
    try:
        for start in range(0, len(svg), _CHUNK):
            parser.feed(svg[start : start + _CHUNK])
            for event in parser.read_events():
                element = cast(Any, event)[1]
                if not isinstance(element, Element):
                    continue
                return dict(element.attrib) if element.tag.rsplit("}", 1)[-1] == "svg" else None
    except ParseError:
        return None
    return None


def svg_size(svg: str) -> SvgSize | None:
    """The size ``svg`` asks for, or None when it does not say (or is no SVG)."""
    attributes = _root_attributes(svg)
    if attributes is None:
        return None
    width, height = _length(attributes.get("width")), _length(attributes.get("height"))
    box = _view_box(attributes.get("viewBox"))
    if width is not None and height is not None:
        return SvgSize(width, height)
    if box is None:
        return None
    if width is not None:
        return SvgSize(width, width * box[1] / box[0])
    if height is not None:
        return SvgSize(height * box[0] / box[1], height)
    return SvgSize(*box)
