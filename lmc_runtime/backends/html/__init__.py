"""HTML: shown as it is, then as a screenshot rendered by headless Chromium."""

from __future__ import annotations

from ...media.browser import (
    CHROMIUM_NAMES,
    Screenshot,
    chromium_argv,
    find_chromium,
    take_screenshot,
)
from .backend import HtmlBackend, HtmlSession

__all__ = [
    "CHROMIUM_NAMES",
    "HtmlBackend",
    "HtmlSession",
    "Screenshot",
    "chromium_argv",
    "find_chromium",
    "take_screenshot",
]
