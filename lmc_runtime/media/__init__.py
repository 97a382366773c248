"""Conversions of what code displays into what LMC messages carry (PNG pictures)."""

from __future__ import annotations

from .limits import MediaLimits
from .raster import RasterConversion, to_png
from .svg import CairoSvg, RenderFailed, SvgRenderer, SvgRendering
from .svg_size import SvgSize, svg_size

__all__ = [
    "CairoSvg",
    "MediaLimits",
    "RasterConversion",
    "RenderFailed",
    "SvgRenderer",
    "SvgRendering",
    "SvgSize",
    "svg_size",
    "to_png",
]
