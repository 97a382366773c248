"""Jupyter messages to LMC messages: the pure translation layer."""

from __future__ import annotations

from typing import Any

import pytest

from lmc_runtime.backends.jupyter.translate import (
    strip_ansi,
    translate_bundle,
    translate_iopub,
    translate_payload,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def iopub(msg_type: str, **content: Any) -> dict[str, Any]:
    return {"msg_type": msg_type, "content": content}


@pytest.mark.anyio
async def test_error_is_the_traceback_without_ansi() -> None:
    msg = iopub(
        "error", ename="ValueError", evalue="bad", traceback=["\x1b[0;31mValueError\x1b[0m: bad"]
    )
    (out,) = await translate_iopub(msg, "r")
    assert out.content == "ValueError: bad\n"
    assert out.extras == {"stream": "stderr", "error": "ValueError", "error_value": "bad"}


@pytest.mark.anyio
async def test_error_without_traceback_still_says_what_happened() -> None:
    (out,) = await translate_iopub(
        iopub("error", ename="KeyError", evalue="'k'", traceback=[]), "r"
    )
    assert out.content == "KeyError: 'k'\n"


@pytest.mark.anyio
async def test_one_image_wins_over_text_and_png_over_jpeg() -> None:
    data = {"image/png": "iVBO\nRw==\n", "image/jpeg": "/9j/", "text/plain": "<Figure>"}
    (image,) = await translate_bundle(data, "r")
    assert (image.type, image.format, image.content) == ("image", "base64.png", "iVBORw==")


@pytest.mark.anyio
async def test_jpeg_alone_becomes_base64_jpeg() -> None:
    (image,) = await translate_bundle({"image/jpeg": "/9j/", "text/plain": "x"}, "r")
    assert image.format == "base64.jpeg"


@pytest.mark.anyio
async def test_html_comes_with_its_text_plain() -> None:
    html, text = await translate_bundle({"text/html": "<b>x</b>", "text/plain": "x"}, "r")
    assert (html.type, html.format, html.content) == ("code", "html", "<b>x</b>")
    assert (text.format, text.content) == ("output", "x")


@pytest.mark.anyio
async def test_other_mime_types_fall_back_to_text_plain_and_list_values_are_joined() -> None:
    data = {"application/vnd.foo+json": {"a": 1}, "text/plain": ["a", "b"]}
    (text,) = await translate_bundle(data, "r")
    assert text.content == "ab"


@pytest.mark.anyio
async def test_status_and_execute_input_produce_nothing() -> None:
    assert await translate_iopub(iopub("status", execution_state="idle"), "r") == []
    assert await translate_iopub(iopub("execute_input", code="1"), "r") == []


def test_pager_payload_becomes_output() -> None:
    (out,) = translate_payload(
        [{"source": "page", "data": {"text/plain": "\x1b[1mDocstring\x1b[0m"}}], "r"
    )
    assert out.content == "Docstring\n"
    assert translate_payload([{"source": "ask_exit"}], "r") == []


def test_strip_ansi_leaves_plain_text_alone() -> None:
    text = "no escapes [0m here"
    assert strip_ansi(text) is text
    assert strip_ansi("\x1b]0;title\x07ok\x1b[2K") == "ok"
