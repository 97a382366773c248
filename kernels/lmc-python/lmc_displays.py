"""Displays of an lmc-runtime Python kernel: PIL's Image.show() and Image.save(),
figures whatever matplotlib's backend, and chart and table data.

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

Figures, whatever the backend
-----------------------------
When the code chose a backend that draws no picture in a kernel
(``matplotlib.use('Agg')``, before or after importing pyplot), matplotlib's
inline backend sends nothing. So at the end of every cell, once pyplot is
imported, each figure still open is sent as a PNG display and closed (the
inline backend has sent and closed its own by then: each figure comes once);
``plt.show()`` under such a backend does the same at once. Nothing is done
before the code imports pyplot.

Saved pictures
--------------
When ``PIL.Image`` is first imported, ``Image.save`` is wrapped: a save to a
file (a path, not a file object) that wrote a PNG or a JPEG is displayed as
that file's bytes, once per save. Saves made by matplotlib itself (its JPEG
output) are left out: the figure is sent as a figure.

Chart and table data
--------------------
Formatters for ``CHART_MIME`` and ``TABLE_MIME``: a displayed matplotlib figure
carries what it shows (``lmc_charts.py``), a pandas DataFrame its columns. Each
recognises its type only once its library is imported (never importing it),
and never fails a display: what it cannot read gets no data.
"""

from __future__ import annotations

import base64
import functools
import importlib.abc
import importlib.util
import io
import os
import sys
from collections.abc import Callable
from typing import Any

CHART_MIME = "application/vnd.lmc.chart+json"
TABLE_MIME = "application/vnd.lmc.table+json"
_PNG_MODES = ("1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _log(text: str) -> None:
    """A line on the kernel's own stderr (the log of the kernel, not the cell's output)."""
    if sys.__stderr__ is not None:
        sys.__stderr__.write(text + "\n")


def _png(image: Any) -> bytes:
    if image.mode not in _PNG_MODES:
        image = image.convert("RGBA" if "A" in image.mode else "RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _register_viewer(image_show: Any) -> None:
    class KernelViewer(image_show.Viewer):  # type: ignore[misc]
        """Shows an image as a PNG display of the running cell."""

        format = "PNG"

        def show(self, image: Any, **options: Any) -> int:
            from IPython.core.display import Image
            from IPython.display import display

            display(Image(data=_png(image), format="png"))  # type: ignore[no-untyped-call]
            return 1

    image_show.register(KernelViewer, order=-1)


class _OnImport(importlib.abc.MetaPathFinder):
    """Calls ``then`` with module ``name`` once it has loaded, then steps aside."""

    def __init__(self, name: str, then: Callable[[Any], None]) -> None:
        self.name = name
        self.then = then

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
            self.then(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _when_imported(name: str, then: Callable[[Any], None]) -> None:
    """``then(module)`` now if ``name`` is imported, else once it is; a failure is logged."""

    def safely(module: Any) -> None:
        try:
            then(module)
        except Exception as exc:  # the module works as it always did
            _log(f"lmc hook on {name}: {exc!r}")

    module = sys.modules.get(name)
    if module is not None:
        safely(module)
    else:
        sys.meta_path.insert(0, _OnImport(name, safely))


def install_image_show() -> None:
    _when_imported("PIL.ImageShow", _register_viewer)


#: Built-in matplotlib backends that draw no window and no inline picture.
_SILENT_BACKENDS = frozenset({"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"})


def _send_figures(ip: Any, pyplot: Any) -> None:
    """Each open figure as a PNG display (with its chart data), then closed."""
    from IPython.core.pylabtools import print_figure
    from IPython.display import publish_display_data

    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None:
        return
    chart = ip.display_formatter.formatters.get(CHART_MIME)
    for manager in helpers.Gcf.get_all_fig_managers():
        figure = manager.canvas.figure
        try:
            png = print_figure(figure, "png", bbox_inches="tight")  # type: ignore[no-untyped-call]
            if png:
                data = {"image/png": base64.b64encode(png).decode("ascii")}
                data["text/plain"] = repr(figure)
                found = chart(figure) if chart is not None else None
                if found:
                    data[CHART_MIME] = found
                publish_display_data(data)  # type: ignore[no-untyped-call]
        finally:
            pyplot.close(figure)


def install_figures(ip: Any) -> None:
    """Figures left open at a cell's end are sent; ``show()`` sends them under Agg and
    the other backends that show nothing in a kernel."""

    def post_run_cell(result: object = None) -> None:
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is None:
            return
        try:
            _send_figures(ip, pyplot)
        except Exception as exc:  # the cell's own outcome stands
            _log(f"lmc figures: {exc!r}")

    def wrap_show(pyplot: Any) -> None:
        original = pyplot.show

        @functools.wraps(original)
        def show(*args: Any, **kwargs: Any) -> Any:
            if str(pyplot.get_backend()).lower() not in _SILENT_BACKENDS:
                return original(*args, **kwargs)
            _send_figures(ip, pyplot)
            return None

        pyplot.show = show

    ip.events.register("post_run_cell", post_run_cell)
    _when_imported("matplotlib.pyplot", wrap_show)


#: How a PNG file and a JPEG file start.
_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"))


def _show_saved(path: Any) -> None:
    """The PNG or JPEG file at ``path`` as a display; nothing for another format."""
    from IPython.display import publish_display_data

    with open(path, "rb") as saved:
        head = saved.read(8)
        mime = next((m for magic, m in _SIGNATURES if head.startswith(magic)), None)
        if mime is None:
            return
        data = head + saved.read()
    publish_display_data({mime: base64.b64encode(data).decode("ascii")})  # type: ignore[no-untyped-call]


def _wrap_save(image_module: Any) -> None:
    original = image_module.Image.save
    if getattr(original, "_lmc_shows_saved", False):
        return  # a revived kernel's: the kernel of its checkpoint wrapped it

    @functools.wraps(original)
    def save(self: Any, fp: Any, format: Any = None, **params: Any) -> Any:
        done = original(self, fp, format, **params)
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if isinstance(fp, str | bytes | os.PathLike) and not caller.startswith("matplotlib"):
            try:
                _show_saved(fp)
            except Exception as exc:  # the save itself succeeded
                _log(f"lmc saved image: {exc!r}")
        return done

    save._lmc_shows_saved = True  # type: ignore[attr-defined]
    image_module.Image.save = save


def install_image_save() -> None:
    _when_imported("PIL.Image", _wrap_save)


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

    class ChartFormatter(BaseFormatter):
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
                _log(f"lmc chart data: {exc!r}")
                return None
            return result

    ip.display_formatter.formatters[CHART_MIME] = ChartFormatter(parent=ip.display_formatter)


def install_tables(ip: Any) -> None:
    """A pandas DataFrame's displays carry its columns as lists (``TABLE_MIME``)."""
    from IPython.core.formatters import BaseFormatter
    from traitlets import ObjectName, Unicode

    class TableFormatter(BaseFormatter):
        format_type = Unicode(TABLE_MIME)
        print_method = ObjectName("_repr_lmc_table_")
        _return_type = (dict,)

        def __call__(self, obj: Any) -> dict[str, Any] | None:
            frame = getattr(sys.modules.get("pandas"), "DataFrame", None)
            if not self.enabled or frame is None or not isinstance(obj, frame):
                return None
            try:
                iso = lambda v: v.isoformat() if hasattr(v, "isoformat") else v  # noqa: E731
                return {str(k): list(map(iso, vs)) for k, vs in obj.to_dict("list").items()}
            except Exception as exc:  # the frame is shown all the same
                _log(f"lmc table data: {exc!r}")
                return None

    ip.display_formatter.formatters[TABLE_MIME] = TableFormatter(parent=ip.display_formatter)


def install(ip: Any) -> None:
    """All of them, in the kernel whose shell is ``ip``."""
    install_image_show()
    install_image_save()
    install_charts(ip)
    install_tables(ip)
    install_figures(ip)
