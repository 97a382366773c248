"""The done marker parser and the line records of the DEBUG trap."""

from __future__ import annotations

import tracemalloc

from hypothesis import given
from hypothesis import strategies as st

from lmc_runtime.backends.shell.protocol import Done, MarkerParser, RecordParser, marker_prefix

TOKEN = "0123456789abcdef"
MARK = marker_prefix(TOKEN)


def feed_all(parser: MarkerParser, chunks: list[bytes]) -> list[bytes | Done]:
    items: list[bytes | Done] = []
    for chunk in chunks:
        items.extend(parser.feed(chunk))
    rest = parser.flush()
    if rest:
        items.append(rest)
    return items


def joined(items: list[bytes | Done]) -> list[bytes | Done]:
    """Adjacent output pieces joined, so split points do not matter."""
    out: list[bytes | Done] = []
    for item in items:
        if isinstance(item, bytes) and out and isinstance(out[-1], bytes):
            out[-1] += item
        else:
            out.append(item)
    return out


def test_output_then_marker_then_output() -> None:
    items = MarkerParser(TOKEN).feed(b"hello\n" + MARK + b"0\x07" + b"late")
    assert items == [b"hello\n", Done(0), b"late"]


def test_status_is_parsed() -> None:
    assert MarkerParser(TOKEN).feed(MARK + b"130\x07") == [Done(130)]


def test_a_marker_split_at_every_byte_is_still_found() -> None:
    data = b"a\rb" + MARK + b"7\x07" + b"c"
    parser = MarkerParser(TOKEN)
    items = feed_all(parser, [bytes([b]) for b in data])
    assert joined(items) == [b"a\rb", Done(7), b"c"]


def test_a_marker_with_another_token_is_output() -> None:
    other = marker_prefix("ffffffffffffffff") + b"0\x07"
    assert joined(feed_all(MarkerParser(TOKEN), [other])) == [other]


def test_a_prefix_without_its_end_is_output() -> None:
    data = MARK + b"12x and more"
    assert joined(feed_all(MarkerParser(TOKEN), [data])) == [data]


def test_a_trailing_escape_is_held_only_until_it_cannot_be_a_marker() -> None:
    parser = MarkerParser(TOKEN)
    assert parser.feed(b"abc\x1b") == [b"abc"]
    assert parser.feed(b"[0m") == [b"\x1b[0m"]


@given(
    # Pieces without a BEL: a piece after a prefix must not complete a real marker.
    st.lists(st.binary(max_size=20).filter(lambda b: b"\x07" not in b), max_size=5),
    st.lists(st.integers(min_value=1, max_value=40), max_size=10),
)
def test_regression_output_is_never_lost_or_reordered(pieces: list[bytes], cuts: list[int]) -> None:
    data = MARK.join(pieces) + MARK + b"0\x07"
    chunks, pos = [], 0
    for cut in cuts:
        chunks.append(data[pos : pos + cut])
        pos += cut
    chunks.append(data[pos:])
    items = feed_all(MarkerParser(TOKEN), chunks)
    assert items.count(Done(0)) == 1 and items[-1] == Done(0)
    assert b"".join(i for i in items if isinstance(i, bytes)) == MARK.join(pieces)


def test_complete_records_give_each_runs_newest_line_and_the_rest_is_kept() -> None:
    records = RecordParser()
    assert records.feed(b"1 3\n1 4\n2 7\n2 1") == {1: 4, 2: 7}
    assert records.held == 3
    assert records.feed(b"2\n") == {2: 12}


def test_garbage_is_ignored_and_line_zero_is_a_begun_record() -> None:
    records = RecordParser()
    assert records.feed(b"x y\n1\n1 0\n3 9\n") == {1: 0, 3: 9}
    assert records.feed(b"4 0\n4 2\n5 2\n5 0\n") == {4: 2, 5: 2}
    assert records.held == 0


def test_regression_a_flood_without_a_newline_is_bounded_and_records_go_on() -> None:
    """Regression: 32 MiB written to the record pipe with no newline (the code can
    reach it) was all kept and joined again with every read: host memory without
    bound and each read costing as much as all before it, on the server's one event
    loop. Now at most the limit is held, no read allocates more than a bounded
    amount, and records after the next newline are read again."""
    records = RecordParser(limit=4096)
    chunk = b"a" * 65536
    tracemalloc.start()
    try:
        for _ in range(512):  # 32 MiB
            assert records.feed(chunk) == {}
            assert records.held <= 4096
            _, peak = tracemalloc.get_traced_memory()
            assert peak < 4 * len(chunk)
            tracemalloc.reset_peak()
    finally:
        tracemalloc.stop()
    assert records.feed(b"aaa 5 6\n7 8\n") == {7: 8}
    assert records.held == 0


def test_a_long_line_is_dropped_whole_even_if_it_ends_like_a_record() -> None:
    records = RecordParser(limit=16)
    assert records.feed(b"x" * 10) == {}
    assert records.feed(b"y" * 10 + b" 1 2\n3 4\n") == {3: 4}
