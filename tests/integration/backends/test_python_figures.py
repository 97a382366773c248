"""Figures and saved pictures come back from a real Python kernel, once each.

Regression tests: ``matplotlib.use('Agg')`` turned plots off for the rest of the
kernel, and ``%matplotlib inline`` after it sent an old figure again or nothing;
``Image.save("x.png")`` in PIL came back as nothing.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from lmc_runtime import Computer, Limits, Message, Timeouts

from ..conftest import Result, run

pytestmark = pytest.mark.integration


@pytest.fixture
def computer(tmp_path: Path) -> Iterator[Computer]:
    """A fresh kernel for each test: a backend chosen by one stays chosen."""
    with Computer(cwd=tmp_path, timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c


def picture(message: Message) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(message.content)))


def plotted(result: Result) -> list[list[list[float]]]:
    """The points of the one line of each figure the run sent, in order."""
    images = result.of("image")
    assert all(m.format == "base64.png" for m in images), images
    return [m.extras["chart"]["elements"][0]["points"] for m in images]  # type: ignore[index]


def assert_ok(result: Result) -> Result:
    final = result.messages[-1]
    assert final.status == "ok", result.messages
    return result


def test_plots_keep_coming_after_agg_is_chosen_before_pyplot(computer: Computer) -> None:
    """Regression: ``matplotlib.use('Agg')`` before pyplot gave no plot, in any run after."""
    first = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    assert plotted(assert_ok(run(computer, first + "plt.plot([1, 2])"))) == [[[0, 1], [1, 2]]]
    assert plotted(assert_ok(run(computer, "plt.plot([3, 4])"))) == [[[0, 3], [1, 4]]]
    assert plotted(assert_ok(run(computer, "print('no plot')"))) == []


def test_plots_keep_coming_after_agg_then_inline_each_once(computer: Computer) -> None:
    """Regression: Agg chosen after pyplot silenced plots; ``%matplotlib inline`` after
    it sent nothing, or an old figure again."""
    setup = "import matplotlib\nimport matplotlib.pyplot as plt\n"
    assert plotted(assert_ok(run(computer, setup + "plt.plot([1, 2])"))) == [[[0, 1], [1, 2]]]
    agg = "matplotlib.use('Agg')\nplt.plot([3, 4])"
    assert plotted(assert_ok(run(computer, agg))) == [[[0, 3], [1, 4]]]
    assert plotted(assert_ok(run(computer, "%matplotlib inline"))) == []
    assert plotted(assert_ok(run(computer, "plt.plot([5, 6])"))) == [[[0, 5], [1, 6]]]
    assert plotted(assert_ok(run(computer, "print('no plot')"))) == []


def test_a_figure_shown_within_a_run_comes_once_and_the_next_one_too(
    computer: Computer,
) -> None:
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\nplt.plot([3, 4])"
    assert plotted(assert_ok(run(computer, code))) == [[[0, 1], [1, 2]], [[0, 3], [1, 4]]]


def test_show_under_agg_sends_the_figure_at_once_without_a_warning(computer: Computer) -> None:
    """Regression: ``plt.show()`` under Agg warned that it cannot show, and the next plot
    went into the same figure."""
    code = (
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "plt.plot([1, 2])\nplt.show()\nplt.plot([3, 4])\nplt.show()"
    )
    result = assert_ok(run(computer, code))
    assert plotted(result) == [[[0, 1], [1, 2]], [[0, 3], [1, 4]]]
    assert result.output == "", result.output


def test_a_figure_saved_under_agg_comes_once(computer: Computer, tmp_path: Path) -> None:
    """A figure saved to PNG and JPEG (matplotlib writes JPEG through PIL) is one picture."""
    code = (
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "plt.plot([1, 2])\nplt.savefig('plot.png')\nplt.savefig('plot.jpg')"
    )
    assert plotted(assert_ok(run(computer, code))) == [[[0, 1], [1, 2]]]
    assert (tmp_path / "plot.png").is_file() and (tmp_path / "plot.jpg").is_file()


@pytest.mark.parametrize(("name", "fmt"), [("x.png", "png"), ("x.jpg", "jpeg")])
def test_an_image_pil_saves_to_a_file_comes_back_once(
    computer: Computer, tmp_path: Path, name: str, fmt: str
) -> None:
    """Regression: ``Image.save("x.png")`` came back as nothing."""
    code = f"from PIL import Image\nImage.new('RGB', (12, 7), 'red').save({name!r})"
    result = assert_ok(run(computer, code))
    (image,) = result.of("image")
    assert image.format == f"base64.{fmt}"
    assert base64.b64decode(str(image.content)) == (tmp_path / name).read_bytes()
    assert picture(image).size == (12, 7)
    assert result.output == ""


def test_an_image_saved_to_a_file_object_or_in_another_format_is_not_shown(
    computer: Computer, tmp_path: Path
) -> None:
    code = (
        "import io\nfrom PIL import Image\nimage = Image.new('RGB', (4, 4))\n"
        "image.save(io.BytesIO(), format='PNG')\nimage.save('x.bmp')\n"
        "with open('y.png', 'wb') as out:\n    image.save(out)"
    )
    result = assert_ok(run(computer, code))
    assert result.of("image") == [], result.messages
    assert (tmp_path / "y.png").stat().st_size > 0


def test_the_kernel_does_not_import_pil_or_matplotlib_until_the_code_does(
    computer: Computer,
) -> None:
    code = "import sys\nprint(sorted({'PIL', 'matplotlib'} & set(sys.modules)))"
    assert assert_ok(run(computer, code)).output == "[]\n"


def test_saved_images_are_charged_to_the_output_budget(tmp_path: Path) -> None:
    """Past the budget, saved images are left out with the one notice displays get."""
    limits = Limits(output_bytes=20_000, spill_dir=tmp_path)
    with Computer(cwd=tmp_path, limits=limits) as computer:
        code = (
            "import os\nfrom PIL import Image\n"
            "for i in range(6):\n"
            "    Image.frombytes('L', (100, 100), os.urandom(10000)).save(f'noise{i}.png')"
        )
        result = assert_ok(run(computer, code))
    shown = result.of("image")
    assert 1 <= len(shown) < 6, [m.format for m in result.messages]
    notes = [m for m in result.of("console", "output") if m.status == "truncated"]
    assert len(notes) == 1 and notes[0].extras["omitted_displays"] == 6 - len(shown)  # type: ignore[index]
