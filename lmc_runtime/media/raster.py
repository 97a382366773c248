"""Raster pictures no LMC format carries (GIF, WebP) as PNG, by Pillow.

An animated picture gives its first frame. A picture with more pixels than
the limits allow is not decoded at all; one over ``max_pixels`` is scaled down.
Decoding runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import anyio
from PIL import Image, UnidentifiedImageError

from .limits import MediaLimits

__all__ = ["RasterConversion", "to_png"]


@dataclass(frozen=True)
class RasterConversion:
    """The PNG, or why there is none."""

    png: bytes | None
    note: str | None = None


def _convert(data: bytes, limits: MediaLimits) -> RasterConversion:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as picture:
                width, height = picture.size
                if width * height > limits.raster_pixels:
                    return RasterConversion(
                        None, f"it is {width} x {height} pixels, more than is decoded"
                    )
                picture.seek(0)
                frame = picture.convert("RGBA" if _has_alpha(picture) else "RGB")
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
            return RasterConversion(None, f"it could not be decoded ({exc})")
    if width * height > limits.max_pixels or max(width, height) > limits.max_side:
        scale = min(
            limits.max_side / max(width, height), (limits.max_pixels / (width * height)) ** 0.5
        )
        frame = frame.resize((max(1, int(width * scale)), max(1, int(height * scale))))
    out = io.BytesIO()
    frame.save(out, format="PNG")
    return RasterConversion(out.getvalue())


def _has_alpha(picture: Image.Image) -> bool:
    return picture.mode in ("RGBA", "LA", "PA") or "transparency" in picture.info


async def to_png(data: bytes, limits: MediaLimits | None = None) -> RasterConversion:
    """``data`` (any picture Pillow reads) as PNG, first frame only."""
    return await anyio.to_thread.run_sync(_convert, data, limits or MediaLimits())
