"""R and HTML through the service, under the sandbox: plots and screenshots come back."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image

from lmc_runtime import Computer

from .server import Server, final_status


def _png(message: dict[str, Any]) -> Image.Image:
    assert message["format"] == "base64.png"
    image = Image.open(io.BytesIO(base64.b64decode(message["content"])))
    image.load()
    return image


def test_r_plot_and_html_screenshot_through_the_sandboxed_service(server: Server) -> None:
    languages = Computer().languages
    for name in ("r", "html"):
        if not languages[name].available:
            pytest.skip(f"{name} is not available here: {languages[name].reason}")
    session_id = server.create(languages=["r", "html"])
    try:
        plot = server.execute(session_id, "plot(1:10)", language="r")
        assert final_status(plot) == "ok", plot
        images = [m for m in plot if m["type"] == "image"]
        assert len(images) == 1 and _png(images[0]).size[0] > 100

        page = server.execute(session_id, "<h1 style='color:red'>hello</h1>", language="html")
        assert final_status(page) == "ok", page
        html = [m for m in page if m["type"] == "code" and m["format"] == "html"]
        assert html and "hello" in html[0]["content"]
        shots = [m for m in page if m["type"] == "image"]
        assert len(shots) == 1
        shot = _png(shots[0]).convert("RGB")
        # The red heading was rendered: some pixel is clearly red.
        colors = shot.getcolors(maxcolors=1 << 24) or []
        assert any(r > 200 and g < 80 and b < 80 for _, (r, g, b) in colors)
    finally:
        server.delete(session_id)
