"""Images and HTML from a run: saved to files, and previewed in the terminal.

Every image is written to a file whose path the REPL prints. A preview then
follows where the terminal can show one: the kitty graphics protocol in kitty
(``TERM=xterm-kitty`` or ``KITTY_WINDOW_ID``, outside tmux), else Unicode
half-blocks drawn with Pillow in a colour terminal, else nothing but the path.
"""

from __future__ import annotations

import base64
import binascii
import enum
import io
import itertools
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from PIL import Image
from rich.color import Color
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style

__all__ = [
    "HalfBlocks",
    "ImageStore",
    "Preview",
    "choose_preview",
    "kitty_escape",
]

_KITTY_CHUNK = 4096
_MAX_COLUMNS = 56
_MAX_ROWS = 20


class Preview(enum.Enum):
    """How images are shown inline."""

    KITTY = "kitty"
    BLOCKS = "blocks"
    NONE = "none"


def choose_preview(env: Mapping[str, str], console: Console, *, enabled: bool) -> Preview:
    """The best inline preview this terminal supports."""
    if not enabled or not console.is_terminal or console.no_color:
        return Preview.NONE
    in_tmux = bool(env.get("TMUX"))
    if not in_tmux and (env.get("TERM") == "xterm-kitty" or env.get("KITTY_WINDOW_ID")):
        return Preview.KITTY
    if console.color_system in ("truecolor", "256"):
        return Preview.BLOCKS
    return Preview.NONE


class ImageStore:
    """Writes each image (and HTML output) of the session to its own file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._numbers = itertools.count(1)
        self._stamp = time.strftime("%Y%m%d-%H%M%S")

    def _new_path(self, suffix: str) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        while True:
            path = self.directory / f"{self._stamp}-{next(self._numbers):03d}{suffix}"
            if not path.exists():
                return path

    def save_image(self, data: str, format_: str | None) -> Path:
        """Decode a base64 image message's content and write it; return the path."""
        try:
            raw = base64.b64decode(data, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise OSError(f"the image is not valid base64: {exc}") from exc
        jpeg = format_ == "base64.jpeg" or raw[:3] == b"\xff\xd8\xff"
        path = self._new_path(".jpg" if jpeg else ".png")
        path.write_bytes(raw)
        return path

    def save_html(self, markup: str) -> Path:
        """Write HTML output to a file; return the path."""
        path = self._new_path(".html")
        path.write_text(markup, encoding="utf-8")
        return path


def kitty_escape(png: bytes, columns: int) -> str:
    """The kitty graphics protocol escape that shows ``png`` ``columns`` cells wide."""
    payload = base64.standard_b64encode(png).decode("ascii")
    chunks = [payload[i : i + _KITTY_CHUNK] for i in range(0, len(payload), _KITTY_CHUNK)] or [""]
    parts = []
    for index, chunk in enumerate(chunks):
        more = 1 if index < len(chunks) - 1 else 0
        keys = f"a=T,f=100,c={columns},m={more}" if index == 0 else f"m={more}"
        parts.append(f"\x1b_G{keys};{chunk}\x1b\\")
    return "".join(parts)


def as_png(path: Path) -> bytes:
    """The image at ``path`` as PNG bytes (kitty takes PNG directly)."""
    raw = path.read_bytes()
    if raw[:8] == b"\x89PNG\r\n\x1a\n":
        return raw
    with Image.open(io.BytesIO(raw)) as img:
        out = io.BytesIO()
        img.save(out, format="PNG")
        return out.getvalue()


class HalfBlocks:
    """A rich renderable drawing an image with "▀": two pixels per cell."""

    def __init__(self, path: Path, max_columns: int = _MAX_COLUMNS, max_rows: int = _MAX_ROWS):
        self.path = path
        self.max_columns = max_columns
        self.max_rows = max_rows

    def _pixels(self, width: int) -> tuple[int, int, list[tuple[int, int, int]]]:
        with Image.open(self.path) as img:
            rgb = img.convert("RGB")
        columns = max(1, min(width, self.max_columns, rgb.width))
        rows = max(1, round(rgb.height * columns / rgb.width / 2))
        if rows > self.max_rows:
            rows = self.max_rows
            columns = max(1, min(columns, round(rgb.width * rows * 2 / rgb.height)))
        raw = rgb.resize((columns, rows * 2), Image.Resampling.LANCZOS).tobytes()
        return columns, rows, [(raw[i], raw[i + 1], raw[i + 2]) for i in range(0, len(raw), 3)]

    def _segments(self, width: int) -> Iterator[Segment]:
        columns, rows, pixels = self._pixels(width)
        styles: dict[tuple[tuple[int, int, int], tuple[int, int, int]], Style] = {}
        for row in range(rows):
            top = pixels[2 * row * columns : (2 * row + 1) * columns]
            bottom = pixels[(2 * row + 1) * columns : (2 * row + 2) * columns]
            for upper, lower in zip(top, bottom, strict=True):
                style = styles.get((upper, lower))
                if style is None:
                    style = Style(color=Color.from_rgb(*upper), bgcolor=Color.from_rgb(*lower))
                    styles[(upper, lower)] = style
                yield Segment("▀", style)
            yield Segment.line()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self._segments(options.max_width)
