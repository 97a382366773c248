"""Output in odd shapes and sizes: partial lines, floods, thousands of images, the budget."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Limits, Message, Timeouts

from ...contract.harness import wait_for
from ..conftest import Result, run
from .conftest import GUARD, assert_well_formed

PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_print_without_newline_then_sleep_streams_before_the_end(c: Computer) -> None:
    run(c, "1")  # the kernel is up: only the run itself is timed
    stamps: list[tuple[float, Message]] = []
    start = time.monotonic()
    for m in c.run(
        "python", "print('a', end='', flush=True)\nimport time\ntime.sleep(1)\nprint('b')"
    ):
        stamps.append((time.monotonic() - start, m))
    result = Result([m for _, m in stamps])
    assert_well_formed(result)
    assert result.output == "ab\n"
    first_a = next(t for t, m in stamps if m.format == "output" and m.content.startswith("a"))
    assert first_a < 0.8, "partial line was held back until the end"


def test_carriage_return_progress_bar_is_passed_through_in_order(c: Computer) -> None:
    code = "import time\nfor i in range(5):\n    print(f'\\r{i}', end='', flush=True); time.sleep(0.05)\nprint()"
    result = run(c, code)
    assert_well_formed(result)
    assert result.output == "\r0\r1\r2\r3\r4\n"


def test_unicode_output_is_intact(c: Computer) -> None:
    result = run(c, "print('é☃😀\\u200b')")
    assert result.output == "é☃😀\u200b\n"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("%time x = 1", "Wall time"),
        ("!echo hi", "hi"),
        ("%%bash\necho from-bash\necho to-stderr >&2", "from-bash\n"),
    ],
)
def test_magics_behave_as_in_jupyter(c: Computer, code: str, expected: str) -> None:
    result = run(c, code)
    assert_well_formed(result)
    assert result.status == "ok"
    assert expected in result.output


def test_ten_megabytes_in_one_write_is_cut_to_the_budget_and_saved(c: Computer) -> None:
    result = run(
        c, "import sys\nn = sys.stdout.write('x' * 10_000_000 + '\\nEND\\n')", timeout=GUARD
    )
    assert_well_formed(result)
    cut = [
        m for m in result.of("console", "output") if (m.extras or {}).get("status") == "truncated"
    ]
    assert len(cut) == 1
    extras = cut[0].extras or {}
    assert extras["total_bytes"] == 10_000_005
    assert len(result.output.encode()) < 300_000
    assert result.output.endswith("\nEND\n")
    with open(extras["output_path"], encoding="utf-8") as fh:
        saved = fh.read()
    assert len(saved) == 10_000_005 and saved.endswith("\nEND\n")


def test_ten_thousand_small_images_all_arrive_in_order() -> None:
    """Guards: none of 10,000 displays is lost on the way (IOPub drops past its
    high-water marks); the budget, which charges displays too, is set to hold them."""
    code = (
        "from IPython.display import display, Image\nimport base64\n"
        f"png = base64.b64decode('{PNG_1X1}')\n"
        "for i in range(10000):\n    display(Image(data=png))\nprint('done')"
    )
    with Computer(timeouts=Timeouts(execution=GUARD), limits=Limits(output_bytes=4_000_000)) as c:
        result = run(c, code, timeout=GUARD * 2)  # only a hang comes near it
    assert_well_formed(result)
    assert len(result.of("image", "base64.png")) == 10_000
    assert result.output == "done\n"
    last_image = max(i for i, m in enumerate(result.messages) if m.type == "image")
    done_at = next(i for i, m in enumerate(result.messages) if m.content == "done\n")
    assert done_at > last_image


@pytest.fixture
def small_budget() -> Iterator[Computer]:
    with Computer(
        timeouts=Timeouts(execution=10, interrupt_grace=1.0), limits=Limits(output_bytes=1000)
    ) as computer:
        yield computer


def test_withheld_output_keeps_its_place_relative_to_displays(small_budget: Computer) -> None:
    """Text past the head of the budget is withheld, and goes out before a later
    HTML display: the messages keep the order the code produced them in."""
    result = run(
        small_budget,
        "print('a' * 600)\nfrom IPython.display import display, HTML\n"
        "display(HTML('<b>x</b>'))\nprint('after')",
    )
    assert_well_formed(result)
    html_at = next(i for i, m in enumerate(result.messages) if m.format == "html")
    before = "".join(m.content for m in result.messages[:html_at] if m.format == "output")
    assert before == "a" * 600 + "\n"


def test_withheld_stderr_and_notices_keep_their_extras(small_budget: Computer) -> None:
    """Withheld text keeps each piece's extras: a traceback past the head of the
    budget is still marked stderr, and a timeout notice keeps its status."""
    error = run(small_budget, "print('p' * 450)\n1/0")
    timeout = run(small_budget, "print('a' * 600, flush=True)\nwhile True: pass", timeout=1)
    assert_well_formed(error)
    assert_well_formed(timeout)
    trace = [m for m in error.of("console", "output") if "ZeroDivisionError" in m.content]
    assert trace and all((m.extras or {}).get("stream") == "stderr" for m in trace)
    notices = [
        m for m in timeout.of("console", "output") if "[lmc] Execution timed out" in m.content
    ]
    assert notices and all((m.extras or {}).get("status") == "timeout" for m in notices)


def test_active_line_does_not_overtake_earlier_output(c: Computer) -> None:
    """The line of a later statement is never reported before output printed
    earlier: the in-kernel sampler flushes stdout and stderr before it reports."""
    result = run(c, "print('first')\nimport time\ntime.sleep(0.4)\nprint('second')")
    assert_well_formed(result)
    kinds = [m.content if m.format == "output" else f"line {m.content}" for m in result.messages]
    assert kinds.index("first\n") < kinds.index("line 3")


def test_a_thread_printing_across_the_end_of_its_run_loses_nothing(
    c: Computer, tmp_path: Path
) -> None:
    """A thread that goes on printing after its cell finished: every line arrives,
    in that run or, marked late, in the next one."""
    done = tmp_path / "bg.done"
    first = run(
        c,
        "import threading, time\ndef bg():\n    for i in range(20):\n"
        "        print('bg', i, flush=True); time.sleep(0.05)\n"
        "    time.sleep(0.2)\n"
        f"    open({str(done)!r}, 'w').close()\n"
        "threading.Thread(target=bg, daemon=True).start()",
    )
    wait_for(done.exists, "the end of the printing thread")
    second = run(c, "print('next')")
    assert_well_formed(first)
    assert_well_formed(second)
    seen = first.output + second.output
    assert all(f"bg {i}\n" in seen for i in range(20))


def test_an_abandoned_run_whose_threads_keep_printing_never_blocks_the_kernel(
    c: Computer,
) -> None:
    """A run whose caller left early while its threads go on printing: what they
    print is dropped, never left to fill a buffer nobody reads, so the next run
    on the session is served."""
    code = (
        "import threading, time\n"
        "def spam():\n"
        "    for i in range(30000):\n"
        "        print('spam', i, flush=True)\n"
        "threading.Thread(target=spam, daemon=True).start()\n"
        "time.sleep(3)"
    )
    stream = c.run("python", code)
    next(stream)
    stream.close()  # type: ignore[attr-defined]
    done = threading.Event()
    box: dict[str, Result] = {}

    def later() -> None:
        box["r"] = run(c, "print('next')")
        done.set()

    threading.Thread(target=later, daemon=True).start()
    assert done.wait(GUARD * 2), "the session is wedged after an abandoned run"
    # The threads still print meanwhile: a line of theirs may fall between the
    # two writes of ``print('next')`` (the text, then its newline).
    assert box["r"].status == "ok" and "next" in box["r"].output
