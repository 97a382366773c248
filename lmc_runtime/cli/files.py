"""Where ``lmc run`` on a terminal puts the images and HTML a run shows."""

from __future__ import annotations

import base64
import binascii
import io
import itertools
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from PIL import Image, UnidentifiedImageError

__all__ = ["OutputFiles"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class OutputFiles:
    """Saves each image and HTML page to its own new file in one folder.

    The folder is ``directory`` if given, else a new temporary folder made on the
    first save; either way ``announce`` hears its path once, before the first file.
    """

    def __init__(self, directory: Path | None, announce: Callable[[str], None]) -> None:
        self._wanted = directory
        self._directory: Path | None = None
        self._announce = announce
        self._numbers = itertools.count(1)

    def _folder(self) -> Path:
        if self._directory is None:
            if self._wanted is None:
                self._directory = Path(tempfile.mkdtemp(prefix="lmc-output-"))
            else:
                self._wanted.mkdir(parents=True, exist_ok=True)
                self._directory = self._wanted.resolve()
            self._announce(f"images and HTML are saved in {self._directory}/")
        return self._directory

    def _write(self, data: bytes, label: str | None, suffix: str) -> Path:
        stem = _UNSAFE.sub("-", label or "output").strip("-.")[:40] or "output"
        folder = self._folder()
        while True:
            path = folder / f"{next(self._numbers):03d}-{stem}{suffix}"
            try:
                with path.open("xb") as handle:
                    handle.write(data)
            except FileExistsError:
                continue
            return path

    def save_image(self, content: str, format_: str | None, label: str | None) -> str:
        """Decode a base64 image and save it; return a short description with its path."""
        try:
            raw = base64.b64decode(content, validate=True)
            with Image.open(io.BytesIO(raw)) as image:
                width, height = image.size
        except (binascii.Error, ValueError, UnidentifiedImageError) as exc:
            raise OSError(f"not a readable image: {exc}") from exc
        suffix = ".jpg" if format_ == "base64.jpeg" else ".png"
        path = self._write(raw, label, suffix)
        return f"{path} ({width}x{height})"

    def save_html(self, content: str, label: str | None) -> str:
        """Save an HTML page; return a short description with its path."""
        data = content.encode("utf-8", "replace")
        path = self._write(data, label, ".html")
        return f"{path} ({len(data)} bytes)"
