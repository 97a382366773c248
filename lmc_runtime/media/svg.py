"""SVG displays as PNG pictures: cairosvg when it is installed, else headless Chromium.

Each renderer runs in a process of its own, so a render never blocks the
event loop and a hostile document is bounded in size, pixels and time (see
:class:`~.limits.MediaLimits`); neither fetches anything from outside the
document. Given a session's settings, a renderer runs as that session's own
processes do (through its launcher: under ``lmc serve``, in its sandbox, as its
user, in its cgroup and so within its limits), never as the host. When no
renderer is available, or every one failed, the result says why and how to
enable one.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .launch import Launch
from .limits import MediaLimits
from .process import run_bounded
from .svg_size import DEFAULT_SIZE, SvgSize, svg_size

__all__ = ["CairoSvg", "RenderFailed", "SvgRenderer", "SvgRendering", "SvgSource"]

logger = logging.getLogger(__name__)

_WORKER = Path(__file__).with_name("svg_worker.py")
_NO_CAIROSVG = 3
#: How to get a renderer, for the note shown when there is none.
ENABLE_HINT = (
    "install cairosvg (pip install cairosvg; it needs the cairo library, "
    "apt-get install libcairo2) or Chromium (apt-get install chromium)"
)


class RenderFailed(Exception):
    """A renderer could not render this document (the message says why)."""


@dataclass(frozen=True)
class SvgSource:
    """An SVG document and the picture size wanted (None: the renderer's own choice)."""

    text: str
    size: SvgSize | None


class SvgBackend(Protocol):
    """One way to turn SVG into PNG."""

    name: str

    def available(self) -> bool:
        """Whether this renderer can run here at all."""
        ...

    async def render(self, source: SvgSource, limits: MediaLimits) -> bytes:
        """The PNG; raises :class:`RenderFailed`."""
        ...


class CairoSvg:
    """cairosvg in a worker process that limits itself (see ``svg_worker.py``). A
    document that gives no size, or a percentage (``width="100%"``), is drawn in
    the box a browser gives an image with none, :data:`~.svg_size.DEFAULT_SIZE`,
    as :class:`~.chromium.ChromiumSvg` draws it."""

    name = "cairosvg"

    def __init__(self, python: str = sys.executable, launch: Launch | None = None) -> None:
        self.python = python
        #: How the worker starts: as the processes of the session the document comes from.
        self.launch = launch

    def available(self) -> bool:
        return importlib.util.find_spec("cairosvg") is not None

    async def render(self, source: SvgSource, limits: MediaLimits) -> bytes:
        argv = [self.python, "-P", str(_WORKER), str(limits.max_pixels)]
        argv.append(str(max(1, int(limits.timeout))))
        argv += [f"{DEFAULT_SIZE.width:g}", f"{DEFAULT_SIZE.height:g}"]
        if source.size is not None:
            argv += [f"{source.size.width:.3f}", f"{source.size.height:.3f}"]
        launch, cwd, env = self.launch, None, None
        if launch is not None:
            argv = launch.wrap(argv)
            cwd, env = launch.cwd, {**os.environ, **launch.env}
        done = await run_bounded(
            argv,
            source.text.encode("utf-8"),
            timeout=limits.timeout,
            stdout_limit=limits.png_bytes,
            cwd=cwd,
            env=env,
            lifeline=launch.lifeline if launch is not None else None,
        )
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        if done.code is None:
            raise RenderFailed(f"cairosvg did not finish within {limits.timeout:g} s")
        if done.code == _NO_CAIROSVG:
            raise RenderFailed(reason[-1] if reason else "cairosvg cannot be loaded")
        if done.code != 0 or done.overflowed or not done.stdout.startswith(b"\x89PNG"):
            detail = reason[-1] if reason else f"exit code {done.code}"
            raise RenderFailed(f"cairosvg failed: {detail}")
        return done.stdout


@dataclass(frozen=True)
class SvgRendering:
    """The PNG made from an SVG, or a sentence saying why there is none."""

    png: bytes | None
    note: str | None = None
    #: True when no renderer is available here at all.
    unavailable: bool = False


class SvgRenderer:
    """Tries each renderer in turn; the first PNG wins. ``launch`` says how the
    default renderers start: as the processes of the session the documents come from."""

    def __init__(
        self,
        backends: Sequence[SvgBackend] | None = None,
        limits: MediaLimits | None = None,
        *,
        launch: Launch | None = None,
    ) -> None:
        if backends is None:
            from .chromium import ChromiumSvg

            backends = (CairoSvg(launch=launch), ChromiumSvg(launch=launch))
        self.backends = tuple(backends)
        self.limits = limits or MediaLimits()

    async def render(self, svg: str) -> SvgRendering:
        limits = self.limits
        size = svg_size(svg)
        described = f"{size}, " if size is not None else ""
        described += f"{len(svg.encode('utf-8')):,} bytes"
        if len(svg) > limits.svg_bytes:
            return SvgRendering(
                None,
                f"The SVG ({described}) was not rendered: it is larger than "
                f"{limits.svg_bytes:,} bytes.",
            )
        wanted = size.fitted(limits.max_pixels, limits.max_side) if size is not None else None
        source = SvgSource(svg, wanted)
        problems: list[str] = []
        for backend in self.backends:
            if not backend.available():
                continue
            began = time.monotonic()
            try:
                return SvgRendering(await backend.render(source, limits))
            except RenderFailed as exc:
                took = time.monotonic() - began
                logger.info("rendering an SVG with %s failed (%.1f s): %s", backend.name, took, exc)
                problems.append(str(exc))
        if not problems:
            return SvgRendering(
                None,
                f"The SVG ({described}) could not be shown as a picture: no renderer "
                f"is available; to enable one, {ENABLE_HINT}.",
                unavailable=True,
            )
        return SvgRendering(
            None, f"The SVG ({described}) could not be rendered: {'; '.join(problems)}."
        )
