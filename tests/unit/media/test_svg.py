"""SVG to PNG: the size an SVG asks for, each renderer, the fallbacks and the bounds."""

from __future__ import annotations

import importlib.util
import io

import pytest
from PIL import Image

from lmc_runtime.media import CairoSvg, MediaLimits, SvgRenderer, svg_size
from lmc_runtime.media.browser import find_chromium
from lmc_runtime.media.chromium import ChromiumSvg
from lmc_runtime.media.svg import RenderFailed, SvgSource

pytestmark = pytest.mark.anyio

needs_cairosvg = pytest.mark.skipif(
    importlib.util.find_spec("cairosvg") is None, reason="cairosvg is not installed"
)
needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")

RED = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80">'
    '<rect width="120" height="80" fill="#ff0000"/></svg>'
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Missing:
    """A renderer that is not installed."""

    name = "missing"

    def available(self) -> bool:
        return False

    async def render(self, source: SvgSource, limits: MediaLimits) -> bytes:
        raise AssertionError("an unavailable renderer is never asked")


class Failing:
    name = "failing"

    def available(self) -> bool:
        return True

    async def render(self, source: SvgSource, limits: MediaLimits) -> bytes:
        raise RenderFailed("it broke")


def size_of(png: bytes | None) -> tuple[int, int]:
    assert png is not None
    with Image.open(io.BytesIO(png)) as picture:
        assert picture.format == "PNG"
        return picture.size


def red_at_centre(png: bytes | None) -> bool:
    assert png is not None
    with Image.open(io.BytesIO(png)) as picture:
        rgb = picture.convert("RGB")
        return rgb.getpixel((rgb.width // 2, rgb.height // 2)) == (255, 0, 0)


def test_svg_size_reads_units_and_view_boxes() -> None:
    assert svg_size(RED) is not None and svg_size(RED).pixels() == (120, 80)  # type: ignore[union-attr]
    points = svg_size('<svg xmlns="http://www.w3.org/2000/svg" width="72pt" height="36pt"/>')
    assert points is not None and points.pixels() == (96, 48)
    boxed = svg_size('<svg width="200" viewBox="0 0 10 5"/>')
    assert boxed is not None and boxed.pixels() == (200, 100)
    assert svg_size('<svg width="100%" height="100%"/>') is None
    assert svg_size("<html><body/></html>") is None
    assert svg_size("not xml at all <") is None


def test_a_huge_size_is_fitted_to_the_pixel_cap_keeping_its_shape() -> None:
    huge = svg_size('<svg width="100000" height="50000"/>')
    assert huge is not None
    fitted = huge.fitted(max_pixels=1_000_000, max_side=8192)
    width, height = fitted.pixels()
    assert width * height <= 1_000_000 and abs(width / height - 2) < 0.01


@needs_cairosvg
async def test_cairosvg_renders_at_the_svg_size() -> None:
    rendered = await SvgRenderer([CairoSvg()]).render(RED)
    assert size_of(rendered.png) == (120, 80) and red_at_centre(rendered.png)


@needs_chromium
async def test_chromium_renders_at_the_svg_size_when_cairosvg_is_missing() -> None:
    rendered = await SvgRenderer([Missing(), ChromiumSvg()]).render(RED)
    assert size_of(rendered.png) == (120, 80) and red_at_centre(rendered.png)


async def test_without_any_renderer_a_note_gives_the_size_and_how_to_enable_one() -> None:
    rendered = await SvgRenderer([Missing(), Missing()]).render(RED)
    assert rendered.png is None and rendered.unavailable
    assert rendered.note is not None
    assert "120 x 80 px" in rendered.note
    assert "pip install cairosvg" in rendered.note and "chromium" in rendered.note


async def test_failing_renderers_say_why_and_the_next_one_is_tried() -> None:
    rendered = await SvgRenderer([Failing(), Missing()]).render(RED)
    assert rendered.png is None and not rendered.unavailable
    assert rendered.note is not None and "it broke" in rendered.note


async def test_a_document_over_the_byte_limit_is_not_rendered() -> None:
    renderer = SvgRenderer([Failing()], MediaLimits(svg_bytes=100))
    rendered = await renderer.render(RED)
    assert rendered.png is None and rendered.note is not None and "larger than" in rendered.note


@needs_cairosvg
async def test_a_huge_svg_is_scaled_down_to_the_pixel_cap() -> None:
    huge = RED.replace('width="120" height="80"', 'width="40000" height="20000"')
    rendered = await SvgRenderer([CairoSvg()], MediaLimits(max_pixels=200_000)).render(huge)
    width, height = size_of(rendered.png)
    assert width * height <= 200_000 and width == 2 * height


@needs_cairosvg
async def test_a_render_over_its_time_bound_is_stopped_with_a_note() -> None:
    rendered = await SvgRenderer([CairoSvg()], MediaLimits(timeout=0.01)).render(RED)
    assert rendered.png is None and rendered.note is not None
    assert "did not finish within" in rendered.note


@needs_cairosvg
async def test_cairosvg_fetches_no_external_entity_or_file(
    tmp_path: pytest.TempPathFactory,
) -> None:
    secret = tmp_path / "secret.png"  # type: ignore[operator]
    Image.new("RGB", (50, 50), (0, 0, 255)).save(secret)
    hostile = (
        f'<!DOCTYPE svg [<!ENTITY x SYSTEM "file://{secret}">]>'
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        'width="50" height="50"><rect width="50" height="50" fill="#ff0000"/>'
        f'<image xlink:href="file://{secret}" width="50" height="50"/><text>&x;</text></svg>'
    )
    rendered = await SvgRenderer([CairoSvg()]).render(hostile)
    if rendered.png is not None:  # rendered without the file: still all red
        assert red_at_centre(rendered.png)
    else:  # or refused because of the entity
        assert rendered.note is not None and "could not be rendered" in rendered.note
