"""Active-line reports from the in-kernel sampler: out of band, 1-based, bounded."""

from __future__ import annotations

from lmc_runtime import Computer

from ..conftest import run


def test_a_three_second_sleep_on_line_2_is_reported_while_it_runs(computer: Computer) -> None:
    messages = list(computer.run("python", "import time\ntime.sleep(3)\nprint('done')"))
    kinds = [(m.format, m.content) for m in messages]
    assert ("active_line", 2) in kinds
    # The output is all there, before or after however the kernel's stream
    # chunked it (print writes "done" and "\n": a flush may come between).
    outputs = [i for i, (kind, _) in enumerate(kinds) if kind == "output"]
    assert "".join(str(kinds[i][1]) for i in outputs) == "done\n", kinds
    assert kinds.index(("active_line", 2)) < outputs[0]
    assert kinds[-1] == ("active_line", None)


def test_lines_inside_loops_and_functions_defined_in_the_cell(computer: Computer) -> None:
    code = (
        "import time\n"  # 1
        "def slow():\n"  # 2
        "    time.sleep(0.3)\n"  # 3
        "for i in range(2):\n"  # 4
        "    time.sleep(0.3)\n"  # 5
        "slow()\n"  # 6
    )
    lines = run(computer, code).lines
    assert 5 in lines and 3 in lines
    assert lines[-1] is None
    assert lines.index(5) < lines.index(3)


def test_lines_of_earlier_cells_are_not_reported_as_this_cells(computer: Computer) -> None:
    run(computer, "import time\n\n\n\ndef helper():\n    time.sleep(0.4)\n")
    lines = run(computer, "x = 1\nhelper()").lines
    assert lines == [2, None]


def test_fast_code_reports_only_the_final_null(computer: Computer) -> None:
    assert run(computer, "a = 1\nb = 2").lines == [None]


def test_reports_come_at_a_bounded_rate(computer: Computer) -> None:
    code = "import time\nt = time.time()\nwhile time.time() - t < 1:\n    a = 1\n    b = 2\n"
    lines = run(computer, code).lines
    assert 1 < len(lines) <= 60  # at most one sample every 20 ms
