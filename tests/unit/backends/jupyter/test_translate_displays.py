"""Which type stands for a display bundle, and what each becomes (translate.py)."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image

from lmc_runtime.backends.jupyter.translate import CHART_MIME, choose, translate_bundle
from lmc_runtime.media import MediaLimits, SvgRenderer
from lmc_runtime.media.svg import SvgSource

pytestmark = pytest.mark.anyio

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="30" height="20"/>'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class NotInstalled:
    name = "none"

    def available(self) -> bool:
        return False

    async def render(self, source: SvgSource, limits: MediaLimits) -> bytes:
        raise AssertionError("never asked")


class Solid:
    """Renders any SVG as a grey PNG of the size asked for."""

    name = "solid"

    def available(self) -> bool:
        return True

    async def render(self, source: SvgSource, limits: MediaLimits) -> bytes:
        assert source.size is not None
        buffer = io.BytesIO()
        Image.new("L", source.size.pixels(), 128).save(buffer, format="PNG")
        return buffer.getvalue()


@pytest.mark.parametrize(
    ("types", "wanted"),
    [
        (["text/plain", "text/html", "image/svg+xml", "image/jpeg", "image/png"], "image/png"),
        (["text/plain", "image/svg+xml", "image/jpeg"], "image/jpeg"),
        (["text/plain", "text/html", "image/gif", "image/svg+xml"], "image/gif"),
        (["text/plain", "text/html", "image/webp"], "image/webp"),
        (["text/plain", "text/html", "image/svg+xml"], "image/svg+xml"),
        (["text/plain", "text/markdown", "text/latex", "text/html"], "text/html"),
        (["text/plain", "text/latex", "text/markdown"], "text/markdown"),
        (["text/plain", "application/json", "text/latex"], "text/latex"),
        (["text/plain", "application/json"], "application/json"),
        (["text/plain", "application/geo+json"], "application/geo+json"),
        (["text/plain", "application/vnd.jupyter.widget-view+json"], "text/plain"),
        (["application/vnd.foo+json", "application/x-bar"], None),
        ([CHART_MIME], None),
    ],
)
def test_precedence(types: list[str], wanted: str | None) -> None:
    assert choose(dict.fromkeys(types, "x")) == wanted


async def test_markdown_and_latex_come_as_their_text() -> None:
    plain = "<IPython.core.display.Markdown object>"
    (md,) = await translate_bundle({"text/markdown": "# T", "text/plain": plain}, "r")
    assert (md.type, md.format, md.content) == ("console", "output", "# T")
    (tex,) = await translate_bundle({"text/latex": ["$x", "^2$"]}, "r")
    assert tex.content == "$x^2$"


async def test_html_still_wins_over_markdown_and_brings_its_text_plain() -> None:
    data = {"text/html": "<b>x</b>", "text/markdown": "**x**", "text/plain": "x"}
    html, text = await translate_bundle(data, "r")
    assert (html.format, text.content) == ("html", "x")


async def test_json_is_pretty_printed() -> None:
    (out,) = await translate_bundle({"application/json": {"a": [1, "é"]}, "text/plain": "x"}, "r")
    assert out.content == '{\n  "a": [\n    1,\n    "é"\n  ]\n}'


async def test_a_bundle_without_any_showable_type_is_named_in_a_note() -> None:
    data = {"application/vnd.foo+json": {"x": 1}, "application/x-bar": "b"}
    (note,) = await translate_bundle(data, "r")
    assert note.content == "[display of application/vnd.foo+json, application/x-bar not shown]\n"
    assert note.extras == {"not_shown": ["application/vnd.foo+json", "application/x-bar"]}


async def test_svg_becomes_a_png_of_its_size() -> None:
    renderer = SvgRenderer([Solid()])
    (image,) = await translate_bundle({"image/svg+xml": SVG, "text/plain": "s"}, "r", svg=renderer)
    assert (image.type, image.format) == ("image", "base64.png")
    with Image.open(io.BytesIO(base64.b64decode(image.content))) as picture:
        assert picture.size == (30, 20)


async def test_svg_without_a_renderer_is_a_note_with_its_size_and_the_fix() -> None:
    renderer = SvgRenderer([NotInstalled()])
    data = {"image/svg+xml": SVG, "text/plain": "<IPython.core.display.SVG object>"}
    (note,) = await translate_bundle(data, "r", svg=renderer)
    assert note.format == "output" and note.content.startswith("[lmc] The SVG (30 x 20 px")
    assert "pip install cairosvg" in note.content
    assert (note.extras or {}).get("status") == "unavailable"


async def test_an_undecodable_gif_is_a_note_and_its_text_plain_follows() -> None:
    data = {"image/gif": base64.b64encode(b"nope").decode(), "text/plain": "a picture"}
    note, text = await translate_bundle(data, "r")
    assert note.content.startswith("[lmc] The image/gif display could not be shown")
    assert text.content == "a picture"


async def test_chart_data_rides_on_the_picture() -> None:
    chart: dict[str, Any] = {"type": "line", "title": "T", "elements": []}
    data = {"image/png": "iVBORw0K", CHART_MIME: chart, "text/plain": "<Figure>"}
    (image,) = await translate_bundle(data, "r")
    assert image.format == "base64.png" and image.extras == {"chart": chart}
