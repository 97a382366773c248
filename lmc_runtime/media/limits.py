"""The bounds every conversion of a display keeps to."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MediaLimits"]


@dataclass(frozen=True)
class MediaLimits:
    """How much one display may cost to convert.

    ``svg_bytes`` is the largest SVG document rendered at all; ``max_pixels``
    and ``max_side`` bound the picture made (a larger one is scaled down,
    keeping its shape); ``timeout`` bounds one render in seconds, process
    start included; ``png_bytes`` is the largest PNG read back.
    """

    svg_bytes: int = 8 << 20
    max_pixels: int = 16_000_000
    max_side: int = 8192
    timeout: float = 20.0
    png_bytes: int = 64 << 20
    #: Raster images (GIF, WebP) with more pixels than this are not decoded.
    raster_pixels: int = 64_000_000
