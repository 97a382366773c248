"""The Python backend's outputs, on a real ipykernel."""

from __future__ import annotations

import base64
import io
import threading
from pathlib import Path

from PIL import Image

from lmc_runtime import Computer, Limits, Timeouts

from ..conftest import run


def test_print_and_result_stream_back_as_console_output(computer: Computer) -> None:
    result = run(computer, "print('hello')\n2380*3875")
    assert result.output == "hello\n9222500"
    assert result.final.format == "active_line" and result.final.content is None
    assert result.status == "ok"


def test_every_message_answers_the_code_message_id(computer: Computer) -> None:
    msg = {
        "role": "assistant",
        "type": "code",
        "format": "python",
        "content": "print(1)",
        "id": "abc",
    }
    messages = list(computer.run(msg))
    assert messages and all(m.in_reply_to == "abc" and m.role == "computer" for m in messages)
    assert len({m.id for m in messages}) == len(messages)


def test_state_persists_between_executions(computer: Computer) -> None:
    run(computer, "persisted = 41")
    assert run(computer, "persisted + 1").output == "42"


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


def test_stdout_and_stderr_keep_their_order(computer: Computer) -> None:
    code = "import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')\nprint('d', file=sys.stderr)"
    result = run(computer, code)
    assert result.output == "a\nb\nc\nd\n"
    stderr = [
        m.content
        for m in result.of("console", "output")
        if (m.extras or {}).get("stream") == "stderr"
    ]
    assert "".join(stderr) == "b\nd\n"


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


def test_input_without_callback_fails_fast_with_a_clear_error(computer: Computer) -> None:
    result = run(computer, "input('name? ')")
    assert result.status == "error"
    assert "StdinNotImplementedError" in result.output


def test_input_is_answered_by_the_callers_callback() -> None:
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return "Ada"

    with Computer(on_input=answer) as c:
        result = run(c, "name = input('name? ')\nprint('hi', name)")
    assert prompts == ["name? "]
    assert result.output == "name? Ada\nhi Ada\n"


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


def test_input_callback_failure_interrupts_instead_of_hanging() -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("no keyboard here")

    with Computer(on_input=broken) as c:
        result = run(c, "input('x? ')")
        assert "could not be answered" in result.output
        assert result.status == "interrupted"
        assert run(c, "print('still here')").output == "still here\n"


def test_output_budget_keeps_head_and_tail_and_saves_everything(tmp_path: Path) -> None:
    with Computer(limits=Limits(output_bytes=2000, spill_dir=tmp_path)) as c:
        result = run(c, "for i in range(100000): print(i)")
    text = result.output
    assert text.startswith("0\n1\n2\n")
    assert text.endswith("99998\n99999\n")
    assert "bytes omitted" in text
    assert len(text.encode()) < 2300
    truncated = [m for m in result.messages if (m.extras or {}).get("status") == "truncated"]
    assert len(truncated) == 1
    saved = Path(truncated[0].extras["output_path"])  # type: ignore[index]
    assert saved.parent == tmp_path
    assert saved.read_text() == "".join(f"{i}\n" for i in range(100000))


def test_sync_run_can_be_interrupted_from_another_thread(computer: Computer) -> None:
    run(computer, "kept = 'yes'")
    timer = threading.Timer(1.0, computer.interrupt)
    timer.start()
    try:
        result = run(computer, "import time\ntime.sleep(60)")
    finally:
        timer.cancel()
    assert result.status == "interrupted"
    assert "KeyboardInterrupt" in result.output
    assert "state was kept" in result.output
    assert run(computer, "print(kept)").output == "yes\n"


def test_late_output_of_a_background_thread_comes_with_the_next_run(computer: Computer) -> None:
    first_msg = {
        "role": "assistant",
        "type": "code",
        "format": "python",
        "id": "bg-1",
        "content": "import threading\nthreading.Timer(0.3, print, ('late line',)).start()",
    }
    list(computer.run(first_msg))
    import time

    time.sleep(0.8)  # the timer prints while no execution is open
    result = run(computer, "print('now')")
    late = [m for m in result.messages if (m.extras or {}).get("late")]
    assert [m.content for m in late] == ["late line\n"]
    assert late[0].in_reply_to == "bg-1"
    assert result.output.endswith("now\n")
