"""Render one SVG document to PNG with cairosvg, in a process of its own.

Run as ``python -P svg_worker.py MAX_PIXELS CPU_SECONDS BOX_WIDTH BOX_HEIGHT
[WIDTH HEIGHT]``: the SVG comes on stdin, the PNG goes to stdout, WIDTH x HEIGHT
pixels if given. The box is what a percentage size of the root (``width="100%"``),
or no size at all, is of, as the box of an ``<img>`` is in a browser; without it
cairosvg refuses such a document ("The SVG size is undefined"). The process limits its own address
space and CPU time before it reads anything, so a hostile document can cost at
most that; the host kills it at its deadline as well. No entity is expanded and
no external file or URL is fetched: only ``data:`` URLs are read (cairosvg
decodes those itself). It imports nothing from lmc_runtime, so it starts fast.

Exit codes: 0 with the PNG on stdout; 3 when cairosvg cannot be imported;
1 when the document could not be rendered (the reason on stderr).
"""

from __future__ import annotations

import resource
import sys
from typing import Any

_ADDRESS_SPACE = 2 << 30
_EMPTY_SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>'
NO_CAIROSVG = 3


def _limit(cpu_seconds: int) -> None:
    for which, value in ((resource.RLIMIT_AS, _ADDRESS_SPACE), (resource.RLIMIT_CPU, cpu_seconds)):
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        if soft == resource.RLIM_INFINITY or soft > value:
            resource.setrlimit(which, (value, hard))


def _render(
    svg: bytes, max_pixels: int, box: tuple[float, float], size: tuple[float, float] | None
) -> bytes:
    from cairosvg.surface import PNGSurface  # type: ignore[import-untyped]
    from cairosvg.url import fetch  # type: ignore[import-untyped]

    class BoundedSurface(PNGSurface):  # type: ignore[misc]
        def _create_surface(self, width: float, height: float) -> Any:
            if round(width) * round(height) > max_pixels:
                raise ValueError(f"the image would be {width:.0f} x {height:.0f} pixels")
            return super()._create_surface(width, height)

    def data_only(url: str, resource_type: str) -> bytes:
        if url.startswith("data:"):
            return bytes(fetch(url, resource_type))
        return _EMPTY_SVG

    width, height = size if size is not None else (None, None)
    png = BoundedSurface.convert(
        bytestring=svg,
        unsafe=False,
        url_fetcher=data_only,
        parent_width=box[0],
        parent_height=box[1],
        output_width=width,
        output_height=height,
    )
    return bytes(png)


def main(argv: list[str]) -> int:
    max_pixels, cpu_seconds = int(argv[1]), int(argv[2])
    box = (float(argv[3]), float(argv[4]))
    size = (float(argv[5]), float(argv[6])) if len(argv) >= 7 else None
    _limit(cpu_seconds)
    try:
        import cairosvg  # type: ignore[import-untyped]  # noqa: F401
    except (ImportError, OSError) as exc:  # OSError: the cairo library itself is missing
        sys.stderr.write(f"cairosvg cannot be loaded: {exc}\n")
        return NO_CAIROSVG
    svg = sys.stdin.buffer.read()
    try:
        png = _render(svg, max_pixels, box, size)
    except Exception as exc:  # any failure of the document is reported, not raised
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        return 1
    sys.stdout.buffer.write(png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
