"""Displays of an lmc-runtime Python kernel: PIL's Image.show() and chart data.

Loaded by ``lmc_startup.py``; costs next to nothing at start: it imports
neither PIL nor matplotlib, and neither need be installed.

Image.show()
------------
PIL's own viewers start xdg-open and the like, which fail in a kernel (or open
windows nobody sees). A viewer registered first in ``PIL.ImageShow`` displays
the image as PNG through IPython's display machinery instead, in the run that
called ``show()``. It is registered when ``PIL.ImageShow`` is first imported
(``Image.show()`` imports it), by a finder on ``sys.meta_path`` that lets the
module load as usual and then adds the viewer.

Chart data
----------
A formatter for the bundle type ``application/vnd.lmc.chart+json`` is
registered; it recognises a ``matplotlib.figure.Figure`` only once matplotlib
is imported (it never imports it): every displayed figure carries, beside its picture, what it
shows (``lmc_charts.py``, read the first time a figure is displayed). It never
fails a display: a figure it cannot read gets no chart data.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import io
import os
import sys
from typing import Any

CHART_MIME = "application/vnd.lmc.chart+json"
_PNG_MODES = ("1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _png(image: Any) -> bytes:
    if image.mode not in _PNG_MODES:
        image = image.convert("RGBA" if "A" in image.mode else "RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _register_viewer(image_show: Any) -> None:
    class KernelViewer(image_show.Viewer):  # type: ignore[misc, name-defined]
        """Shows an image as a PNG display of the running cell."""

        format = "PNG"

        def show(self, image: Any, **options: Any) -> int:
            from IPython.display import Image, display

            display(Image(data=_png(image), format="png"))
            return 1

    image_show.register(KernelViewer, order=-1)


class _ViewerOnImport(importlib.abc.MetaPathFinder):
    """Adds the viewer once ``PIL.ImageShow`` has loaded, then steps aside."""

    name = "PIL.ImageShow"

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            load(module)
            try:
                _register_viewer(module)
            except Exception as exc:  # PIL's own viewers stay
                sys.__stderr__.write(f"lmc Image.show viewer: {exc!r}\n")

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install_image_show() -> None:
    module = sys.modules.get(_ViewerOnImport.name)
    if module is not None:
        _register_viewer(module)
    else:
        sys.meta_path.insert(0, _ViewerOnImport())


def _load_charts() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_lmc_charts", os.path.join(_HERE, "lmc_charts.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def install_charts(ip: Any) -> None:
    from IPython.core.formatters import BaseFormatter
    from traitlets import ObjectName, Unicode

    charts: list[Any] = []

    class ChartFormatter(BaseFormatter):  # type: ignore[misc]
        """Chart data for figures. It recognises them itself rather than through the
        formatters' type registry, which matplotlib's inline backend clears of figures."""

        format_type = Unicode(CHART_MIME)
        print_method = ObjectName("_repr_lmc_chart_")
        _return_type = (dict,)

        def __call__(self, obj: Any) -> dict[str, Any] | None:
            figure = getattr(sys.modules.get("matplotlib.figure"), "Figure", None)
            if not self.enabled or figure is None or not isinstance(obj, figure):
                return None
            try:
                if not charts:
                    charts.append(_load_charts())
                result: dict[str, Any] | None = charts[0].figure_chart(obj)
            except Exception as exc:  # the picture is shown all the same
                sys.__stderr__.write(f"lmc chart data: {exc!r}\n")
                return None
            return result

    ip.display_formatter.formatters[CHART_MIME] = ChartFormatter(parent=ip.display_formatter)


def install(ip: Any) -> None:
    """Both, in the kernel whose shell is ``ip``."""
    install_image_show()
    install_charts(ip)
