"""Line records from the DEBUG trap, and their pacing into active-line reports."""

from __future__ import annotations

from lmc_runtime.backends.shell.lines import LinePacer, LineRecord, parse_records


def test_complete_records_are_parsed_and_the_rest_kept() -> None:
    records, rest = parse_records(b"1 3\n1 4\n2 1")
    assert records == [LineRecord(1, 3), LineRecord(1, 4)]
    assert rest == b"2 1"


def test_garbage_and_line_zero_are_ignored() -> None:
    records, rest = parse_records(b"x y\n1\n1 0\n3 9\n")
    assert records == [LineRecord(3, 9)] and rest == b""


def test_a_line_is_reported_after_its_dwell_and_only_once() -> None:
    pacer = LinePacer(dwell=0.02)
    pacer.see(2, now=10.0)
    assert pacer.take(now=10.01) is None
    assert pacer.due_at() == 10.02
    assert pacer.take(now=10.03) == 2
    assert pacer.take(now=11.0) is None
    assert pacer.due_at() is None


def test_the_line_current_when_the_dwell_ends_is_reported() -> None:
    pacer = LinePacer(dwell=0.02)
    pacer.see(1, now=0.0)
    pacer.see(2, now=0.005)
    assert pacer.take(now=0.015) is None
    assert pacer.take(now=0.021) == 2
    assert pacer.current == 2


def test_regression_a_tight_loop_over_short_lines_is_still_reported() -> None:
    pacer = LinePacer(dwell=0.02)
    reported = []
    for step in range(100):  # lines 2 and 3 alternate every millisecond
        now = step / 1000
        pacer.see(2 + step % 2, now)
        line = pacer.take(now)
        if line is not None:
            reported.append(line)
    assert reported and len(reported) <= 100 / 20 + 1


def test_coming_back_to_a_line_reports_it_again_after_another() -> None:
    pacer = LinePacer(dwell=0.0)
    pacer.see(1, now=0.0)
    assert pacer.take(now=0.0) == 1
    pacer.see(2, now=1.0)
    assert pacer.take(now=1.0) == 2
    pacer.see(1, now=2.0)
    assert pacer.take(now=2.0) == 1
