"""The Python backend's outputs, on a real ipykernel: results, displays, tracebacks, input.

What every language prints and reads alike is in ``tests/contract``.
"""

from __future__ import annotations

import base64
import io

from PIL import Image

from lmc_runtime import Computer, Timeouts

from ..conftest import run


def test_print_and_result_stream_back_as_console_output(computer: Computer) -> None:
    result = run(computer, "print('hello')\n2380*3875")
    assert result.output == "hello\n9222500"
    assert result.final.format == "active_line" and result.final.content is None
    assert result.status == "ok"


def test_string_literal_with_hash_and_blank_lines_stays_intact(computer: Computer) -> None:
    """Guards against marker injection corrupting literals (Open Interpreter's bug)."""
    code = 's = """a # not a comment\n\n\n  b ## c"""\nprint(repr(s))'
    assert run(computer, code).output == repr("a # not a comment\n\n\n  b ## c") + "\n"


def test_docstrings_and_future_imports_work(computer: Computer) -> None:
    code = (
        "from __future__ import annotations\n"
        "def f(x: Undefined) -> int:\n"
        '    """The doc."""\n'
        "    return 1\n"
        "print(f.__doc__, f.__annotations__['x'])"
    )
    assert run(computer, code).output == "The doc. Undefined\n"


def test_marker_like_output_comes_through_untouched(computer: Computer) -> None:
    result = run(computer, "print('##active_line 3##')\nprint('##end_of_execution##')")
    assert result.output == "##active_line 3##\n##end_of_execution##\n"


def test_error_is_traceback_text_without_ansi_and_with_user_line_numbers(
    computer: Computer,
) -> None:
    result = run(computer, "x = 1\ny = 2\n1/0")
    assert result.status == "error"
    assert "ZeroDivisionError" in result.output
    assert "line 3" in result.output
    assert "\x1b[" not in result.output


def test_output_is_coalesced_into_chunks(computer: Computer) -> None:
    result = run(computer, "for i in range(2000): print(i)")
    assert result.output == "".join(f"{i}\n" for i in range(2000))
    assert len(result.of("console", "output")) < 50


def test_matplotlib_plot_appears_without_special_calls(computer: Computer) -> None:
    result = run(computer, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])")
    images = result.of("image", "base64.png")
    assert len(images) == 1
    picture = Image.open(io.BytesIO(base64.b64decode(images[0].content)))
    assert picture.format == "PNG" and picture.size[0] > 100


def test_displayed_pil_image_appears(computer: Computer) -> None:
    code = "from PIL import Image\nfrom IPython.display import display\ndisplay(Image.new('RGB', (8, 6), 'red'))"
    images = run(computer, code).of("image")
    assert len(images) == 1
    picture = Image.open(io.BytesIO(base64.b64decode(images[0].content)))
    assert picture.size == (8, 6)


def test_jpeg_display_becomes_base64_jpeg(computer: Computer) -> None:
    code = (
        "import io\nfrom PIL import Image\nfrom IPython.display import Image as I, display\n"
        "b = io.BytesIO(); Image.new('RGB', (5, 5)).save(b, 'JPEG')\n"
        "display(I(data=b.getvalue(), format='jpeg'))"
    )
    images = run(computer, code).of("image")
    assert [m.format for m in images] == ["base64.jpeg"]


def test_html_becomes_code_html_and_its_text_plain_output(computer: Computer) -> None:
    code = "from IPython.display import HTML\nHTML('<b>bold</b>')"
    result = run(computer, code)
    assert [m.content for m in result.of("code", "html")] == ["<b>bold</b>"]
    assert "IPython.core.display.HTML" in result.output


def test_input_in_the_first_cell_after_each_restart_is_answered() -> None:
    """Regression: the kernel's input_request was dropped when the stdin socket's
    handshake had not finished yet, and the first cell after a (re)start hung."""
    with Computer(on_input=lambda prompt: "ok", timeouts=Timeouts(execution=20)) as c:
        for _ in range(4):
            result = run(c, "print(input('go? '))")
            assert result.output == "go? ok\nok\n", result.output
            c.restart("python")


def test_input_whose_stdin_request_is_lost_is_answered_from_its_iopub_copy() -> None:
    """Regression: a stdin input_request dropped by the kernel's ROUTER (peer not yet
    attached) hung the execution; the IOPub copy must be enough."""
    lose_stdin_copy = (
        "k = get_ipython().kernel\n"
        "real = type(k.session).send.__get__(k.session)\n"
        "def lossy(stream, kind, content=None, parent=None, *a, **kw):\n"
        "    if kind == 'input_request' and stream is k.stdin_socket:\n"
        "        return real(k.iopub_socket, 'lmc_input_request', content, parent=parent)\n"
        "    return real(stream, kind, content, parent, *a, **kw)\n"
        "k.session.send = lossy\n"
    )
    with Computer(on_input=lambda prompt: "yes", timeouts=Timeouts(execution=20)) as c:
        run(c, lose_stdin_copy)
        assert run(c, "print(input('sure? '))").output == "sure? yes\nyes\n"


def test_each_input_is_answered_exactly_once_in_order() -> None:
    answers = iter(["first", "second"])
    with Computer(on_input=lambda prompt: next(answers), timeouts=Timeouts(execution=20)) as c:
        result = run(c, "a = input('a? ')\nb = input('b? ')\nprint(a, b)")
    assert result.output == "a? first\nb? second\nfirst second\n"


def test_flushing_streams_that_hold_nothing_never_waits_for_the_iopub_thread(
    computer: Computer,
) -> None:
    """Guards the saved waits at each run's end (ipykernel flushes both streams
    twice; a flush waited for the IOPub thread even with nothing to send), while
    a flush with text still sends it before the run ends."""
    code = (
        "import sys\n"
        "asked = []\n"
        "thread = sys.stdout.pub_thread\n"
        "schedule = thread.schedule\n"
        "thread.schedule = lambda f: (asked.append(f), schedule(f))[1]\n"
        "try:\n"
        "    sys.stdout.flush(); sys.stderr.flush()\n"
        "    empty = len(asked)\n"
        "    sys.stdout.write('text\\n'); sys.stdout.flush()\n"
        "finally:\n"
        "    thread.schedule = schedule\n"
        "print(empty, len(asked) > empty)"
    )
    assert run(computer, code).output == "text\n0 True\n"
