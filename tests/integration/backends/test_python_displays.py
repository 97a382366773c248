"""Every kind of display on a real Python kernel comes back as a message.

Regression tests for displays that used to vanish: bundles of only
``text/markdown``, ``text/latex``, ``image/svg+xml`` or ``application/json``
gave nothing, and PIL's ``Image.show()`` gave only xdg-open errors, a run late.
"""

from __future__ import annotations

import base64
import importlib.util
import io
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from lmc_runtime import Computer, Message, Timeouts
from lmc_runtime.media.browser import find_chromium

from ..conftest import Result, run

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def computer() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c


def picture(message: Message) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(message.content)))


def chart_of(result: Result) -> dict[str, Any]:
    (image,) = result.of("image", "base64.png")
    chart: dict[str, Any] = (image.extras or {})["chart"]
    return chart


@pytest.mark.skipif(
    importlib.util.find_spec("cairosvg") is None and find_chromium() is None,
    reason="no SVG renderer here (the fallback note is tested in tests/unit/media)",
)
def test_svg_display_becomes_a_png_of_the_svg_size(computer: Computer) -> None:
    code = (
        "from IPython.display import SVG, display\n"
        'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80">'
        '<rect width="120" height="80" fill="red"/></svg>\'))'
    )
    result = run(computer, code)
    (image,) = result.of("image", "base64.png")
    assert picture(image).size == (120, 80)
    assert result.output == "" and result.status == "ok"


def test_markdown_display_comes_as_its_text(computer: Computer) -> None:
    result = run(computer, "from IPython.display import Markdown\nMarkdown('# Title\\n*x*')")
    assert result.output == "# Title\n*x*"


def test_latex_display_comes_as_its_text(computer: Computer) -> None:
    result = run(computer, "from IPython.display import Latex\nLatex(r'$\\frac{a}{b}$')")
    assert result.output == "$\\frac{a}{b}$"


def test_json_display_comes_pretty_printed(computer: Computer) -> None:
    result = run(computer, "from IPython.display import JSON\nJSON({'a': [1, 2]})")
    assert result.output == '{\n  "a": [\n    1,\n    2\n  ]\n}'


def test_unknown_bundle_with_text_plain_comes_as_that_text(computer: Computer) -> None:
    code = (
        "from IPython.display import display\n"
        "display({'application/vnd.foo+json': {'x': 1}, 'text/plain': 'Foo(x=1)'}, raw=True)"
    )
    assert run(computer, code).output == "Foo(x=1)"


def test_unknown_bundle_without_text_plain_is_a_note_naming_its_types(computer: Computer) -> None:
    code = (
        "from IPython.display import display\n"
        "display({'application/vnd.foo+json': {'x': 1}, 'application/x-bar': 'b'}, raw=True)"
    )
    result = run(computer, code)
    assert result.output == "[display of application/vnd.foo+json, application/x-bar not shown]\n"


def test_gif_display_becomes_a_png_of_its_first_frame(computer: Computer) -> None:
    code = (
        "import io\nfrom PIL import Image as P\nfrom IPython.display import Image, display\n"
        "frames = [P.new('RGB', (12, 9), c) for c in ('red', 'blue')]\n"
        "b = io.BytesIO(); frames[0].save(b, 'GIF', save_all=True, append_images=frames[1:])\n"
        "display(Image(data=b.getvalue(), format='gif'))"
    )
    (image,) = run(computer, code).of("image", "base64.png")
    shown = picture(image)
    assert shown.size == (12, 9) and shown.convert("RGB").getpixel((6, 4)) == (255, 0, 0)


def test_jpeg_display_stays_jpeg(computer: Computer) -> None:
    code = (
        "import io\nfrom PIL import Image as P\nfrom IPython.display import Image, display\n"
        "b = io.BytesIO(); P.new('RGB', (10, 6), 'green').save(b, 'JPEG')\n"
        "display(Image(data=b.getvalue(), format='jpeg'))"
    )
    (image,) = run(computer, code).of("image")
    assert image.format == "base64.jpeg" and picture(image).size == (10, 6)


def test_pil_image_show_gives_one_image_in_the_same_run(computer: Computer) -> None:
    code = "from PIL import Image\nImage.new('RGB', (10, 7), 'blue').show()\nprint('after')"
    result = run(computer, code)
    (image,) = result.of("image")
    assert image.format == "base64.png" and picture(image).size == (10, 7)
    assert result.output == "after\n"
    assert "xdg-open" not in run(computer, "print('next')").output


def test_line_chart_data(computer: Computer) -> None:
    code = (
        "import matplotlib.pyplot as plt\nplt.figure()\n"
        "plt.plot([1, 2, 3], [2, 4, 8], label='growth')\n"
        "plt.title('Growth'); plt.xlabel('Time (s)'); plt.ylabel('Size [m]'); plt.show()"
    )
    chart = chart_of(run(computer, code))
    assert (chart["type"], chart["title"]) == ("line", "Growth")
    assert (chart["x_label"], chart["x_unit"], chart["y_unit"]) == ("Time (s)", "s", "m")
    assert chart["elements"] == [{"label": "growth", "points": [[1, 2], [2, 4], [3, 8]]}]
    assert chart["x_scale"] == "linear" and chart["x_tick_labels"]


def test_bar_chart_data(computer: Computer) -> None:
    code = (
        "import matplotlib.pyplot as plt\nplt.figure()\n"
        "plt.bar(['apples', 'pears'], [3, 5], label='fruit'); plt.title('Stock'); plt.show()"
    )
    chart = chart_of(run(computer, code))
    assert (chart["type"], chart["title"]) == ("bar", "Stock")
    assert chart["elements"] == [
        {"label": "apples", "group": "fruit", "value": 3},
        {"label": "pears", "group": "fruit", "value": 5},
    ]


def test_scatter_chart_data(computer: Computer) -> None:
    code = (
        "import matplotlib.pyplot as plt\nplt.figure()\n"
        "plt.scatter([1, 2], [5, 7], label='dots'); plt.xlabel('x'); plt.show()"
    )
    chart = chart_of(run(computer, code))
    assert (chart["type"], chart["x_label"]) == ("scatter", "x")
    assert chart["elements"] == [{"label": "dots", "points": [[1, 5], [2, 7]]}]


def test_pie_chart_data(computer: Computer) -> None:
    code = (
        "import matplotlib.pyplot as plt\nplt.figure()\n"
        "plt.pie([1, 3], labels=['a', 'b']); plt.title('Share'); plt.show()"
    )
    chart = chart_of(run(computer, code))
    assert (chart["type"], chart["title"]) == ("pie", "Share")
    assert chart["elements"] == [
        {"label": "a", "angle": 90, "radius": 1},
        {"label": "b", "angle": 270, "radius": 1},
    ]


def test_a_long_series_is_sampled_and_says_so(computer: Computer) -> None:
    code = "import matplotlib.pyplot as plt\nplt.figure()\nplt.plot(range(25000)); plt.show()"
    (series,) = chart_of(run(computer, code))["elements"]
    assert series["truncated"] is True and series["total_points"] == 25000
    assert len(series["points"]) <= 10_000 and series["points"][0] == [0, 0]
