"""The node line protocol: requests out, events in, output joined."""

from __future__ import annotations

import json

from lmc_runtime.backends.core import Finished, Line, Output
from lmc_runtime.backends.core.wire import (
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
