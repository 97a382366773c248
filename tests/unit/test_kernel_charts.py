"""The Python kernel's chart extraction (kernels/lmc-python/lmc_charts.py), on figures
drawn here with Agg: the kinds the kernel tests do not cover."""

from __future__ import annotations

import datetime
import importlib.util
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from lmc_runtime.backends.kernelspecs import kernels_dir

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")


@pytest.fixture(scope="module")
def charts() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "lmc_charts_under_test", kernels_dir() / "lmc-python" / "lmc_charts.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def figure() -> Iterator[Any]:
    fig = plt.figure()
    yield fig
    plt.close(fig)


def drawn(charts: ModuleType, fig: Any) -> Any:
    fig.canvas.draw()
    return charts.figure_chart(fig)


def test_box_and_whisker_statistics(charts: ModuleType, figure: Any) -> None:
    ax = figure.add_subplot()
    ax.boxplot([[1, 2, 3, 4, 5, 20], [2, 3, 4]], patch_artist=True, tick_labels=["p", "q"])
    chart = drawn(charts, figure)
    assert chart["type"] == "box_and_whisker"
    assert chart["elements"][0] == {
        "label": "p",
        "min": 1.0,
        "first_quartile": 2.25,
        "median": 3.5,
        "third_quartile": 4.75,
        "max": 5.0,
        "outliers": [20.0],
    }
    assert chart["elements"][1]["label"] == "q" and chart["elements"][1]["median"] == 3.0


def test_horizontal_bars_name_the_category_axis_x(charts: ModuleType, figure: Any) -> None:
    ax = figure.add_subplot()
    ax.barh(["a", "b"], [1, 2])
    ax.set_xlabel("amount (kg)")
    ax.set_ylabel("kind")
    chart = drawn(charts, figure)
    assert (chart["x_label"], chart["y_label"], chart["y_unit"]) == ("kind", "amount (kg)", "kg")
    assert [(e["label"], e["value"]) for e in chart["elements"]] == [("a", 1.0), ("b", 2.0)]


def test_several_axes_make_a_superchart(charts: ModuleType, figure: Any) -> None:
    top, bottom = figure.subplots(2)
    top.plot([1, 2])
    bottom.bar([1], [2])
    figure.suptitle("Both")
    chart = drawn(charts, figure)
    assert (chart["type"], chart["title"]) == ("superchart", "Both")
    assert [e["type"] for e in chart["elements"]] == ["line", "bar"]


def test_dates_are_iso_strings_and_the_scale_says_datetime(charts: ModuleType, figure: Any) -> None:
    ax = figure.add_subplot()
    ax.plot([datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)], [1, float("nan")])
    chart = drawn(charts, figure)
    assert chart["x_scale"] == "datetime"
    assert chart["elements"][0]["points"] == [["2024-01-01", 1.0], ["2024-01-02", None]]


def test_a_figure_without_data_has_no_chart_and_an_image_is_unknown(
    charts: ModuleType, figure: Any
) -> None:
    ax = figure.add_subplot()
    assert drawn(charts, figure) is None
    ax.imshow([[0, 1], [1, 0]])
    assert drawn(charts, figure)["type"] == "unknown"
