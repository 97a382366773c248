"""The node line protocol: requests out, events in, output joined."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from lmc_runtime.backends.core import Finished, Line, Output
from lmc_runtime.backends.core.lines import Lines, Piece
from lmc_runtime.backends.core.runner.wire import (
    LINE_LIMIT,
    PENDING_NOTE,
    Decoder,
    Exiting,
    Keyed,
    Ready,
    decode_event,
    encode_request,
)
from lmc_runtime.replies import Status


def test_request_is_one_json_line_whatever_the_code_holds() -> None:
    raw = encode_request(3, 'console.log("a\\nb")\nlet x = `\n`', lines=False)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    assert json.loads(raw) == {
        "id": 3,
        "code": 'console.log("a\\nb")\nlet x = `\n`',
        "lines": False,
    }


def test_each_event_kind_decodes() -> None:
    assert decode_event(b'{"k":"o","d":"hi\\n"}') == Output("hi\n", "stdout")
    assert decode_event(b'{"k":"e","d":"oops"}') == Output("oops", "stderr")
    assert decode_event(b'{"k":"l","id":2,"n":7}') == Keyed(2, Line(7))
    assert decode_event(b'{"k":"d","id":2,"s":"ok","p":false}') == Keyed(2, Finished(Status.OK))
    assert decode_event(b'{"k":"r","pid":99}') == Ready(99)
    assert decode_event(b'{"k":"x","c":3}') == Exiting(3)


def test_unknown_status_is_treated_as_an_error() -> None:
    assert decode_event(b'{"k":"d","id":1,"s":"weird","p":true}') == Keyed(
        1, Finished(Status.ERROR, note=PENDING_NOTE)
    )


def test_unreadable_lines_are_skipped_not_raised() -> None:
    for raw in (b"not json", b'{"k":"?"}', b'{"k":"l","id":"x","n":1}', b"[1,2]"):
        assert decode_event(raw) is None


def test_decoder_keeps_a_partial_line_for_the_next_chunk() -> None:
    decoder = Decoder()
    assert decoder.feed(b'{"k":"l","id":1,') == []
    assert decoder.feed(b'"n":4}\n{"k":"d","id":1,"s":"ok","p":false}\n') == [
        Keyed(1, Line(4)),
        Keyed(1, Finished(Status.OK)),
    ]


def test_decoder_joins_consecutive_output_of_one_stream_only() -> None:
    chunk = b"".join(
        json.dumps(event).encode() + b"\n"
        for event in (
            {"k": "o", "d": "a"},
            {"k": "o", "d": "b"},
            {"k": "e", "d": "c"},
            {"k": "o", "d": "d"},
            {"k": "l", "id": 1, "n": 2},
            {"k": "o", "d": "e"},
        )
    )
    assert Decoder().feed(chunk) == [
        Output("ab", "stdout"),
        Output("c", "stderr"),
        Output("d", "stdout"),
        Keyed(1, Line(2)),
        Output("e", "stdout"),
    ]


def test_decoder_splits_a_flood_into_bounded_chunks() -> None:
    line = json.dumps({"k": "o", "d": "x" * 1000}).encode() + b"\n"
    events = Decoder().feed(line * 200)
    assert len(events) > 1
    assert "".join(e.text for e in events if isinstance(e, Output)) == "x" * 200_000


def _outputs(events: list[object]) -> list[tuple[str, str]]:
    """Output events as (stream, text), adjacent ones of a stream joined."""
    joined: list[tuple[str, str]] = []
    for event in events:
        assert isinstance(event, Output), event
        if joined and joined[-1][0] == event.stream:
            joined[-1] = (event.stream, joined[-1][1] + event.text)
        else:
            joined.append((event.stream, event.text))
    return joined


def test_lines_come_whole_up_to_the_limit_and_in_pieces_past_it() -> None:
    lines = Lines(limit=4)
    assert lines.feed(b"ab") == []
    assert lines.feed(b"c\nde") == [Piece(b"abc", True, True)]
    assert lines.feed(b"fgh") == [Piece(b"defgh", True, False)]
    assert lines.held == 0
    assert lines.feed(b"ij") == [Piece(b"ij", False, False)]
    assert lines.feed(b"k\nl\n") == [Piece(b"k", False, True), Piece(b"l", True, True)]


def test_regression_a_flood_without_a_newline_is_bounded_and_events_go_on() -> None:
    """Regression: 32 MiB written to the events FIFO with no newline (the code can
    hand the FIFO to a child) was all kept and joined again with every read
    (``(partial + data).split``): host memory without bound and a cost growing
    with the square of the size, on the server's one event loop. Now at most the
    limit is held, no read allocates more than a bounded amount, and the runner's
    own events still come through: one written right after the garbage (no
    newline between) and those after the next newline."""
    decoder = Decoder()
    chunk = b"a" * 65536
    tracemalloc.start()
    try:
        for _ in range(512):  # 32 MiB
            assert decoder.feed(chunk) == []
            assert decoder.held <= LINE_LIMIT
            _, peak = tracemalloc.get_traced_memory()
            assert peak < 4 * (len(chunk) + LINE_LIMIT)
            tracemalloc.reset_peak()
    finally:
        tracemalloc.stop()
    done = b'{"k":"d","id":1,"s":"ok","p":false}\n'
    assert decoder.feed(done + b'{"k":"o","d":"after"}\n') == [
        Keyed(1, Finished(Status.OK)),
        Output("after", "stdout"),
    ]
    assert decoder.held == 0


def test_garbage_before_an_event_on_its_line_is_dropped_and_the_event_kept() -> None:
    decoder = Decoder()
    assert decoder.feed(b'garbage{"k":"l","id":2,"n":3}\nmore garbage\n') == [Keyed(2, Line(3))]


TEXTS = [
    "plain " * 50,
    'quotes " and \\ backslashes \\\\" and \n newlines \t tabs \x00 controls' * 5,
    "caf\u00e9 \u4e2d\u6587 \U0001f600 emoji \U0001f600\U0001f601" * 20,
    "\\" * 300,
]


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 13, 64, 1000])
def test_output_longer_than_the_limit_is_decoded_as_it_comes(ascii_only: bool, size: int) -> None:
    """One big write of the code is one long event: it comes out whole, in pieces, in
    order with the events around it, however the reads cut it (within escapes,
    surrogate pairs and UTF-8 characters), and only a bounded part of it is held."""
    events = [{"k": "o", "d": "before"}, *({"k": "e", "d": text} for text in TEXTS)]
    events += [{"k": "o", "d": "x" * 200}, {"k": "l", "id": 1, "n": 2}]
    data = b"".join(
        json.dumps(e, ensure_ascii=ascii_only, separators=(",", ":")).encode() + b"\n"
        for e in events
    )
    decoder = Decoder(limit=64)
    got: list[object] = []
    for start in range(0, len(data), size):
        got.extend(decoder.feed(data[start : start + size]))
        assert decoder.held <= 64 + size
    assert got[-1] == Keyed(1, Line(2))
    assert _outputs(got[:-1]) == [
        ("stdout", "before"),
        ("stderr", "".join(TEXTS)),
        ("stdout", "x" * 200),
    ]
    assert decoder.held == 0


@pytest.mark.parametrize("limit", [LINE_LIMIT, 16])
def test_the_value_of_the_last_expression_is_output_of_its_own(limit: int) -> None:
    """``{"k":"v"}`` is stdout that shows the code's value: never joined with the
    code's own stdout around it, short or decoded as it comes."""
    events = [{"k": "o", "d": "printed\n"}, {"k": "v", "d": "'a value'\n"}, {"k": "o", "d": "x"}]
    data = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)
    got = Decoder(limit=limit).feed(data)
    assert [(o.text, o.value) for o in got if isinstance(o, Output)] == [
        ("printed\n", False),
        ("'a value'\n", True),
        ("x", False),
    ]
    assert decode_event(b'{"k":"v","d":"2\\n"}') == Output("2\n", "stdout", value=True)
