"""An SVG that gives no size, or a percentage of nothing (``width="100%"``), is drawn
by cairosvg in the box a browser gives an image with no size, so it does not
depend on the Chromium fallback (which is slow to start, and absent on many hosts)."""

from __future__ import annotations

import importlib.util
import io

import pytest
from PIL import Image

from lmc_runtime.media import CairoSvg, MediaLimits, SvgRenderer
from lmc_runtime.media.browser import find_chromium
from lmc_runtime.media.chromium import ChromiumSvg
from lmc_runtime.media.svg import RenderFailed, SvgSource
from lmc_runtime.media.svg_size import DEFAULT_SIZE

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        importlib.util.find_spec("cairosvg") is None, reason="cairosvg is not installed"
    ),
]

_CIRCLE = '<circle cx="150" cy="75" r="60" fill="#ff0000"/>'
#: What plotting libraries emit to fill their container: a size of 100%, no viewBox.
PERCENT = f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" height="100%">{_CIRCLE}</svg>'
UNSIZED = f'<svg xmlns="http://www.w3.org/2000/svg">{_CIRCLE}</svg>'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class NoFallback:
    """A fallback that must not be needed: it fails the test if it is asked."""

    name = "fallback"

    def available(self) -> bool:
        return True

    async def render(self, source: SvgSource, limits: MediaLimits) -> bytes:
        raise RenderFailed("the fallback was asked to render a document cairosvg can draw")


def picture(png: bytes | None) -> tuple[tuple[int, int], tuple[int, int, int]]:
    """The size of ``png`` and the colour at its centre."""
    assert png is not None
    with Image.open(io.BytesIO(png)) as shot:
        assert shot.format == "PNG"
        rgb = shot.convert("RGB")
        centre = rgb.getpixel((rgb.width // 2, rgb.height // 2))
        assert isinstance(centre, tuple)
        return shot.size, (centre[0], centre[1], centre[2])


@pytest.mark.parametrize("svg", [PERCENT, UNSIZED], ids=["percent", "no-size"])
async def test_regression_cairosvg_draws_an_svg_of_undefined_size_in_the_default_box(
    svg: str,
) -> None:
    """Regression: cairosvg refused these ("The SVG size is undefined"), so the
    picture hung on Chromium alone; in a loaded CI run Chromium failed too and the
    display came back as a note, no picture."""
    rendered = await SvgRenderer([CairoSvg(), NoFallback()]).render(svg)
    assert rendered.note is None, rendered.note
    assert picture(rendered.png) == (DEFAULT_SIZE.pixels(), (255, 0, 0))


async def test_a_percentage_size_with_a_view_box_still_follows_the_view_box() -> None:
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 120 80">'
        '<rect width="120" height="80" fill="#ff0000"/></svg>'
    )
    rendered = await SvgRenderer([CairoSvg(), NoFallback()]).render(svg)
    assert picture(rendered.png) == ((120, 80), (255, 0, 0))


@pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")
async def test_cairosvg_and_chromium_give_an_unsized_svg_the_same_picture_size() -> None:
    by_cairo = await SvgRenderer([CairoSvg()]).render(PERCENT)
    by_chromium = await SvgRenderer([ChromiumSvg()]).render(PERCENT)
    assert picture(by_cairo.png) == picture(by_chromium.png) == ((300, 150), (255, 0, 0))
