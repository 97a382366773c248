"""SVG to PNG by a screenshot in headless Chromium, the renderer of last resort.

The SVG is shown as an ``<img>`` of a ``data:`` URL: in an image, a browser
runs no script of the document and loads nothing outside it, and Chromium
itself runs offline (see :mod:`lmc_runtime.media.browser`). The
window is the picture's size; the screenshot is cropped to it.
"""

from __future__ import annotations

import base64
import io
import shutil
import tempfile
from pathlib import Path

import anyio
from PIL import Image

from .browser import find_chromium, screenshot_page
from .launch import Launch
from .limits import MediaLimits
from .svg import RenderFailed, SvgSource
from .svg_size import DEFAULT_SIZE

__all__ = ["ChromiumSvg"]

_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><style>"
    "html,body{{margin:0;padding:0;background:#fff;overflow:hidden}}"
    "img{{display:block;width:{w}px;height:{h}px}}</style></head>"
    "<body><img alt='' src='data:image/svg+xml;base64,{data}'></body></html>"
)


def _crop(png: bytes, size: tuple[int, int]) -> bytes:
    with Image.open(io.BytesIO(png)) as shot:
        if shot.size == size:
            return png
        out = io.BytesIO()
        shot.crop((0, 0, *size)).save(out, format="PNG")
        return out.getvalue()


class ChromiumSvg:
    """Headless Chromium, one process per picture; given ``launch``, started as it
    says (a session's sandbox, user and cgroup)."""

    name = "Chromium"

    def __init__(self, chromium: str | None = None, launch: Launch | None = None) -> None:
        self.chromium = chromium
        self.launch = launch

    def available(self) -> bool:
        return find_chromium(self.chromium) is not None

    async def render(self, source: SvgSource, limits: MediaLimits) -> bytes:
        chromium = find_chromium(self.chromium)
        if chromium is None:
            raise RenderFailed("Chromium was not found")
        size = (source.size or DEFAULT_SIZE).pixels()
        data = base64.b64encode(source.text.encode("utf-8")).decode("ascii")
        page = _PAGE.format(w=size[0], h=size[1], data=data)
        stop = anyio.Event()
        if self.launch is not None:
            shot = await screenshot_page(
                self.launch, chromium, page, size, timeout=limits.timeout, stop=stop
            )
        else:  # the library's own process: a folder of its own
            folder = Path(await anyio.to_thread.run_sync(tempfile.mkdtemp, "", "lmc-svg-"))
            try:
                shot = await screenshot_page(
                    Launch.local(folder), chromium, page, size, timeout=limits.timeout, stop=stop
                )
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(shutil.rmtree, folder, True)
        if shot.png is None:
            raise RenderFailed(f"Chromium made no picture: {shot.problem}")
        return await anyio.to_thread.run_sync(_crop, shot.png, size)
