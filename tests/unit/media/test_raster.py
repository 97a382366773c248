"""GIF and WebP displays become PNG (first frame); what cannot be decoded says so."""

from __future__ import annotations

import io

import pytest
from PIL import Image, features

from lmc_runtime.media import MediaLimits, to_png

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def decoded(png: bytes | None) -> Image.Image:
    assert png is not None
    picture = Image.open(io.BytesIO(png))
    assert picture.format == "PNG"
    return picture


async def test_an_animated_gif_gives_its_first_frame() -> None:
    frames = [Image.new("RGB", (12, 9), colour) for colour in ("red", "blue")]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:])
    picture = decoded((await to_png(buffer.getvalue())).png)
    assert picture.size == (12, 9)
    assert picture.convert("RGB").getpixel((5, 5)) == (255, 0, 0)


@pytest.mark.skipif(not features.check("webp"), reason="Pillow was built without WebP")
async def test_webp_becomes_png() -> None:
    buffer = io.BytesIO()
    Image.new("RGBA", (7, 5), (0, 255, 0, 128)).save(buffer, format="WEBP", lossless=True)
    picture = decoded((await to_png(buffer.getvalue())).png)
    assert picture.size == (7, 5) and picture.mode == "RGBA"


async def test_a_picture_over_the_pixel_cap_is_scaled_down() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (400, 200), "red").save(buffer, format="GIF")
    picture = decoded((await to_png(buffer.getvalue(), MediaLimits(max_pixels=20_000))).png)
    assert picture.width * picture.height <= 20_000 and picture.width == 2 * picture.height


async def test_garbage_is_a_note_not_an_exception() -> None:
    converted = await to_png(b"GIF89a-not-really")
    assert converted.png is None and converted.note is not None
    assert "could not be decoded" in converted.note
