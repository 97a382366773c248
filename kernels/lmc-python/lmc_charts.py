"""What a matplotlib figure shows, as JSON-able data (the chart of an image message).

Loaded by ``lmc_displays.py`` the first time a figure is displayed, so a
kernel that never plots never reads it. The shape follows E2B's charts: a
chart has a ``type`` (``line``, ``scatter``, ``bar``, ``pie``,
``box_and_whisker``, ``superchart`` for a figure of several axes, or
``unknown``), a ``title`` and ``elements``; charts on x/y axes add
``x_label``, ``y_label``, ``x_unit`` and ``y_unit`` (from "Label (unit)" or
"Label [unit]"), and line and scatter charts their ticks, tick labels and
scales (``linear``, ``log``, ``datetime``, ``categorical``...).

Elements: line and scatter ``{label, points: [[x, y], ...]}``; bar
``{label, group, value}``; pie ``{label, angle, radius}``; box
``{label, min, first_quartile, median, third_quartile, max, outliers}``.
A series with more than ``MAX_POINTS`` points is sampled evenly and says so
(``truncated``, ``total_points``); past ``MAX_ELEMENTS`` elements a chart
is cut and says ``truncated`` too. Numbers are plain floats, NaN and
infinities ``None``, dates ISO 8601 strings.
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

MAX_POINTS = 10_000
MAX_ELEMENTS = 1_000
_UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")


def _value(value: Any) -> Any:
    """One data value as JSON: a float, None, a string or an ISO date."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if type(value).__name__ == "datetime64":
        return str(value.astype("datetime64[s]"))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return number if math.isfinite(number) else None


def _tick(value: Any) -> Any:
    """A tick location, without the noise of its float arithmetic."""
    number = _value(value)
    return float(f"{number:.12g}") if isinstance(number, float) else number


def _date(number: Any) -> Any:
    from matplotlib.dates import num2date

    try:
        return num2date(float(number)).isoformat()
    except (TypeError, ValueError, OverflowError):
        return _value(number)


def _label(text: str) -> str | None:
    return text or None


def _series_label(label: Any, kind: str, index: int) -> str:
    text = str(label)
    return f"{kind} {index}" if not text or text.startswith("_") else text


def _unit(label: str | None) -> str | None:
    match = _UNIT.search(label) if label else None
    return (match.group(1) or match.group(2)) if match else None


def _scale(axis: Any, scale: str) -> str:
    getter = getattr(axis, "get_converter", None)
    converter = getter() if getter is not None else axis.converter
    module = type(converter).__module__ if converter is not None else ""
    if module == "matplotlib.dates":
        return "datetime"
    if module == "matplotlib.category":
        return "categorical"
    return scale


def _base(ax: Any, kind: str) -> dict[str, Any]:
    return {"type": kind, "title": _label(ax.get_title()), "elements": []}


def _planar(ax: Any, kind: str) -> dict[str, Any]:
    chart = _base(ax, kind)
    x_label, y_label = _label(ax.get_xlabel()), _label(ax.get_ylabel())
    chart.update(x_label=x_label, y_label=y_label, x_unit=_unit(x_label), y_unit=_unit(y_label))
    return chart


def _axes_info(ax: Any, chart: dict[str, Any]) -> None:
    """Ticks, tick labels and scales of a line or scatter chart."""
    for name, axis, scale in (("x", ax.xaxis, ax.get_xscale()), ("y", ax.yaxis, ax.get_yscale())):
        kind = _scale(axis, scale)
        convert = _date if kind == "datetime" else _tick
        chart[f"{name}_ticks"] = [convert(tick) for tick in axis.get_ticklocs()]
        chart[f"{name}_tick_labels"] = [label.get_text() for label in axis.get_ticklabels()]
        chart[f"{name}_scale"] = kind


def _points(xs: Any, ys: Any, dates: tuple[bool, bool]) -> dict[str, Any]:
    """Pairs of values, sampled evenly down to ``MAX_POINTS``."""
    total = min(len(xs), len(ys))
    step = max(1, math.ceil(total / MAX_POINTS))
    x_of = _date if dates[0] else _value
    y_of = _date if dates[1] else _value
    points = [[x_of(xs[i]), y_of(ys[i])] for i in range(0, total, step)]
    series: dict[str, Any] = {"points": points}
    if step > 1:
        series.update(truncated=True, total_points=total)
    return series


def _grid_like(line: Any) -> bool:
    xs, ys = line.get_xdata(), line.get_ydata()
    return len(xs) == 2 and len(ys) == 2 and (xs[0] == xs[1] or ys[0] == ys[1])


def _kind(ax: Any) -> str:
    from matplotlib.collections import PathCollection
    from matplotlib.patches import PathPatch, Rectangle, Wedge

    lines, patches, collections = list(ax.lines), list(ax.patches), list(ax.collections)
    if ax.images or ax.tables or ax.artists:
        return "unknown"
    if lines and not patches and not collections:
        return "line"
    if patches and not collections and all(isinstance(p, PathPatch) for p in patches):
        return "box_and_whisker"
    lines = [line for line in lines if not _grid_like(line)]
    if collections and not patches and not lines:
        return "scatter" if all(isinstance(c, PathCollection) for c in collections) else "unknown"
    if patches and not collections and not lines:
        if all(isinstance(p, Wedge) for p in patches):
            return "pie"
        if all(isinstance(p, Rectangle) for p in patches):
            return "bar"
    return "unknown"


def _dates(ax: Any) -> tuple[bool, bool]:
    return (
        _scale(ax.xaxis, "") == "datetime",
        _scale(ax.yaxis, "") == "datetime",
    )


def _line(ax: Any) -> dict[str, Any]:
    chart = _planar(ax, "line")
    _axes_info(ax, chart)
    dates = _dates(ax)
    for index, line in enumerate(ax.lines):
        series = {"label": _series_label(line.get_label(), "Line", index)}
        series.update(_points(line.get_xdata(), line.get_ydata(), dates))
        chart["elements"].append(series)
    return chart


def _scatter(ax: Any) -> dict[str, Any]:
    chart = _planar(ax, "scatter")
    _axes_info(ax, chart)
    dates = _dates(ax)
    for index, collection in enumerate(ax.collections):
        offsets = collection.get_offsets()
        series = {"label": _series_label(collection.get_label(), "Series", index)}
        series.update(_points(offsets[:, 0], offsets[:, 1], dates))
        chart["elements"].append(series)
    return chart


def _tick_names(axis: Any) -> dict[float, str]:
    return {
        float(loc): label.get_text()
        for loc, label in zip(axis.get_ticklocs(), axis.get_ticklabels(), strict=False)
    }


def _bar(ax: Any) -> dict[str, Any]:
    from matplotlib.container import BarContainer

    chart = _planar(ax, "bar")
    containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    horizontal = bool(containers) and getattr(containers[0], "orientation", None) == "horizontal"
    if horizontal:  # the categories are on y: x stands for the categories, as for columns
        chart.update(x_label=chart["y_label"], y_label=chart["x_label"])
        chart.update(x_unit=chart["y_unit"], y_unit=chart["x_unit"])
    names = _tick_names(ax.yaxis if horizontal else ax.xaxis)
    for index, container in enumerate(containers):
        group = _series_label(container.get_label(), "Group", index)
        for rect in container.patches:
            if horizontal:
                where, value = rect.get_y() + rect.get_height() / 2, rect.get_width()
            else:
                where, value = rect.get_x() + rect.get_width() / 2, rect.get_height()
            label = next((n for loc, n in names.items() if abs(loc - where) < 1e-6), None)
            label = label if label else str(_value(where))
            chart["elements"].append({"label": label, "group": group, "value": _value(value)})
    return chart


def _pie(ax: Any) -> dict[str, Any]:
    chart = _base(ax, "pie")
    for wedge in ax.patches:
        angle = round(abs(float(wedge.theta2) - float(wedge.theta1)), 6)
        chart["elements"].append(
            {"label": str(wedge.get_label()), "angle": angle, "radius": _value(wedge.r)}
        )
    return chart


def _box_stats(box: tuple[float, float, float, float], lines: list[Any]) -> dict[str, Any]:
    """A box's statistics from the lines drawn over its span (all with the value on y)."""
    left, right, low, high = box
    stats: dict[str, Any] = {"first_quartile": low, "third_quartile": high, "outliers": []}
    stats.update(min=low, max=high, median=None)
    for xs, ys, markers_only in lines:
        if not xs or min(xs) < left - 1e-9 or max(xs) > right + 1e-9:
            continue
        if markers_only:
            stats["outliers"].extend(_value(y) for y in ys)
        elif len(ys) == 2 and ys[0] == ys[1] and low <= ys[0] <= high:
            stats["median"] = _value(ys[0])
        elif len(ys) == 2 and xs[0] == xs[1]:
            stats["min"] = min(stats["min"], *ys)
            stats["max"] = max(stats["max"], *ys)
    return stats


def _box(ax: Any) -> dict[str, Any]:
    chart = _planar(ax, "box_and_whisker")
    boxes = [p.get_patch_transform().transform(p.get_path().vertices) for p in ax.patches]
    centers = [(float(b[:, 0].min()) + float(b[:, 0].max())) / 2 for b in boxes]
    ticks = [float(t) for t in ax.get_xticks()]
    vertical = all(any(abs(c - t) < 1e-6 for t in ticks) for c in centers)
    flip = (lambda a, b: (a, b)) if vertical else (lambda a, b: (b, a))
    if not vertical:
        chart.update(x_label=chart["y_label"], y_label=chart["x_label"])
        chart.update(x_unit=chart["y_unit"], y_unit=chart["x_unit"])
    names = _tick_names(ax.xaxis if vertical else ax.yaxis)
    lines = []
    for line in ax.lines:
        xs, ys = flip([float(v) for v in line.get_xdata()], [float(v) for v in line.get_ydata()])
        lines.append((xs, ys, line.get_linestyle() in ("None", "", " ")))
    for box in boxes:
        pos, val = flip(box[:, 0], box[:, 1])
        extent = (float(pos.min()), float(pos.max()), float(val.min()), float(val.max()))
        center = (extent[0] + extent[1]) / 2
        label = next((n for loc, n in names.items() if abs(loc - center) < 1e-6), "")
        stats = _box_stats(extent, lines)
        element = {"label": label or str(_value(center))}
        for key in ("min", "first_quartile", "median", "third_quartile", "max", "outliers"):
            element[key] = (
                [_value(v) for v in stats[key]] if key == "outliers" else _value(stats[key])
            )
        chart["elements"].append(element)
    return chart


_EXTRACTORS = {
    "line": _line,
    "scatter": _scatter,
    "bar": _bar,
    "pie": _pie,
    "box_and_whisker": _box,
}


def axes_chart(ax: Any) -> dict[str, Any]:
    """The chart one set of axes shows."""
    kind = _kind(ax)
    extract = _EXTRACTORS.get(kind)
    chart = extract(ax) if extract is not None else _base(ax, kind)
    if len(chart["elements"]) > MAX_ELEMENTS:
        chart.update(elements=chart["elements"][:MAX_ELEMENTS], truncated=True)
    return chart


def figure_chart(figure: Any) -> dict[str, Any] | None:
    """The chart ``figure`` shows, or None for a figure without data."""
    axes = list(figure.get_axes())
    if not any(ax.has_data() for ax in axes):
        return None
    if len(axes) == 1:
        return axes_chart(axes[0])
    suptitle = getattr(figure, "_suptitle", None)
    title = suptitle.get_text() if suptitle is not None else ""
    elements = [axes_chart(ax) for ax in axes[:MAX_ELEMENTS]]
    return {"type": "superchart", "title": title or None, "elements": elements}
